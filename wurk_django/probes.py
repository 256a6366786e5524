"""Health probes for the web app: liveness (the process answers) and readiness (Redis
answers within a timeout and meets the version floor), unauthenticated and cheap.

`ProbeMiddleware`, first in MIDDLEWARE, answers the paths WURK["PROBES"] names before
any other middleware runs: no session, no user, no database, and no ALLOWED_HOSTS
check (a Kubernetes probe's Host header is the pod's IP, which Django would refuse with
400). The views `liveness` and `readiness` can be routed in a URLconf instead. Bodies
say "ok", "ready" or why not, and nothing else: no URL, no password, no version.
"""

import threading

from django.http import HttpResponse, JsonResponse

from . import conf
from .core.errors import ConfigurationError
from .core.redis import REDIS_ERRORS, RedisConnection

ALLOWED_METHODS = ("GET", "HEAD")
POOL_SIZE = 4  # probes arriving together in a threaded server share these sockets

_connections: dict[tuple, RedisConnection] = {}
_lock = threading.Lock()


def _answer(request, status: int, body: dict) -> HttpResponse:
    if request.method not in ALLOWED_METHODS:
        response = JsonResponse({"status": "method not allowed"}, status=405)
        response["Allow"] = ", ".join(ALLOWED_METHODS)
    else:
        response = JsonResponse(body, status=status)
    response["Cache-Control"] = "no-store"
    return response


def liveness(request) -> HttpResponse:
    """200 whenever the process can answer at all; it touches nothing else."""
    return _answer(request, 200, {"status": "ok"})


def readiness(request) -> HttpResponse:
    """200 if Redis answers within the probes' timeout and is 6.2 or newer, else 503."""
    problem = redis_problem(_probes().timeout_s)
    if problem is None:
        return _answer(request, 200, {"status": "ready"})
    return _answer(request, 503, {"status": "not ready", "reason": problem})


def redis_problem(timeout_s: float) -> str | None:
    """Why Redis is not fit to serve, in words that name no server; None if it is."""
    from .core.runner import MIN_REDIS_VERSION
    try:
        connection = _connection(timeout_s)
        version = connection.server_version(retry=False)  # one try: answer within the timeout
    except REDIS_ERRORS:
        return "redis unavailable"
    except ConfigurationError:
        return "redis not configured"
    if version < MIN_REDIS_VERSION:
        return f"redis older than {'.'.join(map(str, MIN_REDIS_VERSION))}"
    return None


def _connection(timeout_s: float) -> RedisConnection:
    # Only the Redis settings are read (not a whole Config), each time, so a change of
    # settings is seen; the pool is kept per URL.
    url, options = conf.redis_target()
    key = (url, repr(sorted(options.items())), timeout_s)
    with _lock:
        connection = _connections.get(key)
        if connection is None:
            connection = _connections[key] = RedisConnection(
                url, pool_size=POOL_SIZE, socket_timeout_s=timeout_s, **options)
        return connection


_cached: tuple = (object(), None)  # (the WURK setting it was read from, ProbeSettings)


def _probes() -> "conf.ProbeSettings":
    """WURK["PROBES"], read again only when the WURK setting is another object (every
    request passes through the middleware, so it must cost next to nothing)."""
    global _cached
    wurk = conf.raw_wurk_setting()
    if _cached[0] is not wurk:
        _cached = (wurk, conf.probe_settings())
    return _cached[1]


class ProbeMiddleware:
    """Answers WURK["PROBES"]'s paths itself; every other request passes through."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        probes = _probes()
        path = request.path_info
        if path == probes.liveness_path:
            return liveness(request)
        if path == probes.readiness_path:
            return readiness(request)
        return self.get_response(request)
