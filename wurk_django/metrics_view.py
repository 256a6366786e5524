"""The Prometheus endpoint: the cluster's metrics in the text exposition format, for a
scraper that holds the bearer token or calls from an allowed network (WURK["METRICS"]).

Off until one of the two is set. The admin session never grants access: a scrape is a
machine's request, and a staff cookie must not turn the endpoint into something a
cross-site page can read. Mounted at `<dashboard>/prometheus`; route it anywhere else
with `path("metrics", wurk_django.metrics_view.prometheus_metrics)`.
"""

import hmac
import ipaddress
import logging

from django.http import HttpResponse

from . import conf
from .core.config import get_default_config
from .core.errors import ConfigurationError, RedisFailure
from .core.redis import connection_for

logger = logging.getLogger("wurk")


def _text(status: int, message: str, **headers) -> HttpResponse:
    response = HttpResponse(message + "\n", status=status, content_type="text/plain")
    for name, value in headers.items():
        response[name.replace("_", "-")] = value
    return response


def _allowed_address(request, networks: tuple) -> bool:
    # REMOTE_ADDR only: X-Forwarded-For is whatever the client wrote.
    try:
        address = ipaddress.ip_address(request.META.get("REMOTE_ADDR", ""))
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)  # ::ffff:10.0.0.1 is 10.0.0.1
    return any((mapped or address) in network for network in networks)


def _has_token(request, token: str) -> bool:
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(),
                                                              token.encode())


def refusal(request, endpoint: "conf.MetricsEndpoint") -> HttpResponse | None:
    """Why this request may not scrape, as a response; None when it may."""
    if not endpoint.enabled:
        return _text(404, "Not found.")
    if request.method not in ("GET", "HEAD"):
        return _text(405, "Use GET.", Allow="GET, HEAD")
    if endpoint.allow_ips and not _allowed_address(request, endpoint.allow_ips):
        return _text(403, "This address may not read the metrics.")
    if endpoint.token is not None and not _has_token(request, endpoint.token):
        return _text(401, "Send Authorization: Bearer <WURK['METRICS']['TOKEN']>.",
                     WWW_Authenticate='Bearer realm="wurk-metrics"')
    return None


def prometheus_metrics(request) -> HttpResponse:
    """The cluster's gauges and counters, read from Redis in one round trip."""
    from .core.api.prometheus import cluster_exposition
    try:
        endpoint = conf.metrics_endpoint()
    except ConfigurationError as exc:
        logger.error("The metrics endpoint is misconfigured: %s", exc)
        return _text(500, "The metrics endpoint is misconfigured; see manage.py check.")
    refused = refusal(request, endpoint)
    if refused is not None:
        return refused
    config = get_default_config()
    try:
        body, content_type = cluster_exposition(connection_for(config),
                                                request.headers.get("Accept", ""), config)
    except ConfigurationError as exc:  # prometheus_client is not installed
        logger.error("The metrics endpoint cannot answer: %s", exc)
        return _text(500, str(exc))
    except RedisFailure as exc:
        return _text(503, f"Redis cannot be read: {exc}")
    response = HttpResponse(body, content_type=content_type)
    response["Cache-Control"] = "no-store"
    return response
