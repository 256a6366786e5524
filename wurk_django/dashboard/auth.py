"""Who may see and change what, CSRF for the JSON API, problem JSON, and the check order.

Every API view is built by `endpoint()`, which runs the checks in one fixed
order: 401 → 404/405 → read_only → forbidden → 415 → csrf_failed → the action.
"""

import logging

from django.http import HttpResponse, JsonResponse
from django.middleware.csrf import CsrfViewMiddleware

from .. import conf
from ..core.api.base import WrongTypeError
from ..core.errors import RedisUnavailableError
from ..core.payload import loads
from .cache import API, cache_control_for

logger = logging.getLogger("wurk")

VIEW_PERMISSION = "wurk.view_dashboard"
CHANGE_PERMISSION = "wurk.change_dashboard"
MUTATING_METHODS = ("POST", "DELETE")
# Browsers send these for requests a page of the same site (or the user) started.
ALLOWED_FETCH_SITES = ("same-origin", "none")
MAX_BODY_BYTES = 1_000_000

PROBLEMS = {
    "unauthenticated": (401, "Log in to the Django admin first."),
    "forbidden": (403, "Your account may not do this."),
    "read_only": (403, "Changes are disabled by server configuration (read-only mode)."),
    "csrf_failed": (403, "CSRF verification failed."),
    "not_found": (404, "Not found."),
    "method_not_allowed": (405, "Method not allowed."),
    "conflict": (409, "Conflict."),
    "unsupported_media_type": (415, "Send a JSON body with Content-Type: application/json."),
    "invalid_request": (400, "Invalid request."),
    "redis_unavailable": (503, "Redis cannot be reached."),
    "wrong_type": (500, "A Redis key holds another type of value than Wurk keeps there."),
    "not_available": (501, "This part of the dashboard is not available yet."),
    "server_error": (500, "The server failed to answer; the error is in its log."),
}


class ApiError(Exception):
    """Raised by a handler to answer with problem JSON; `extra` joins the body."""

    def __init__(self, slug: str, detail: str | None = None, **extra):
        super().__init__(detail or PROBLEMS[slug][1])
        self.slug = slug
        self.detail = detail or PROBLEMS[slug][1]
        self.extra = extra


def can_view(user) -> bool:
    """Staff, plus `wurk.view_dashboard` when REQUIRE_VIEW_PERMISSION is on."""
    if not (user.is_active and user.is_staff):
        return False
    return not conf.dashboard_settings().require_view_permission or user.has_perm(VIEW_PERMISSION)


def can_change(user) -> bool:
    """A viewer who is a superuser or holds `wurk.change_dashboard` (read-only mode aside)."""
    return can_view(user) and (user.is_superuser or user.has_perm(CHANGE_PERMISSION))


def problem(slug: str, detail: str | None = None, **extra) -> JsonResponse:
    """An RFC 9457 problem answer whose `type` is one of the slugs in PROBLEMS."""
    status, title = PROBLEMS[slug]
    body = {"type": slug, "title": title, "status": status, "detail": detail or title, **extra}
    return JsonResponse(body, status=status, content_type="application/problem+json")


class _CsrfCheck(CsrfViewMiddleware):
    """Django's own CSRF check, returning the reason instead of rendering a 403 page."""

    def _reject(self, request, reason):
        return reason


def csrf_failure(request) -> str | None:
    """Why the request fails Django's CSRF check (or Sec-Fetch-Site), or None if it passes."""
    site = request.META.get("HTTP_SEC_FETCH_SITE")
    if site is not None and site not in ALLOWED_FETCH_SITES:
        return f"Sec-Fetch-Site is {site!r}, not same-origin."
    # Neither method calls get_response or the view, and _reject returns the reason.
    check = _CsrfCheck(lambda request: None)  # type: ignore[arg-type]
    check.process_request(request)
    return check.process_view(request, None, (), {})  # type: ignore[arg-type, return-value]


def _is_json(request) -> bool:
    return request.content_type == "application/json"


def _json_body(request) -> dict:
    if len(request.body) > MAX_BODY_BYTES:
        raise ApiError("invalid_request", "The request body is too large.")
    if not request.body.strip():
        return {}
    try:
        body = loads(request.body)  # the core decoder: deep nesting and NaN are refused too
    except ValueError:
        raise ApiError("invalid_request", "The request body is not valid JSON.") from None
    if not isinstance(body, dict):
        raise ApiError("invalid_request", "The request body must be a JSON object.")
    return body


def _checks(request, handlers: dict):
    """Run the checks in the fixed order above; a problem response, or the handler to call."""
    if not request.user.is_authenticated:
        return problem("unauthenticated")
    if not handlers:
        return problem("not_found")
    handler = handlers.get("GET" if request.method == "HEAD" else request.method)
    if handler is None:
        allowed = ", ".join(sorted(set(handlers) | ({"HEAD"} if "GET" in handlers else set())))
        response = problem("method_not_allowed", f"Use {allowed}.")
        response["Allow"] = allowed
        return response
    if request.method not in MUTATING_METHODS:
        return handler if can_view(request.user) else problem("forbidden")
    # Read-only mode goes first among the 403s: no user, superusers included, may lift it.
    if conf.dashboard_settings().read_only:
        return problem("read_only")
    if not can_change(request.user):
        return problem("forbidden")
    # A form cannot send this content type cross-site, so 415 blocks form-based CSRF even
    # where the CSRF setup is broken.
    if not _is_json(request):
        return problem("unsupported_media_type")
    reason = csrf_failure(request)
    if reason:
        return problem("csrf_failed", reason)
    return handler


def endpoint(**handlers):
    """Build an API view from `GET=`, `POST=`, `DELETE=` handlers.

    A handler takes `(request, **url_kwargs)` and returns a dict (sent as JSON) or a
    response; mutations find their parsed body in `request.json`.
    """
    def view(request, **kwargs):
        response = _answer(request, handlers, kwargs)
        response["X-Content-Type-Options"] = "nosniff"
        value = cache_control_for(request.method, response.status_code, API,
                                  response.get("Cache-Control"))
        if value:
            response["Cache-Control"] = value
        return response

    # The API answers 401 itself and runs the CSRF check at its fixed step (as JSON).
    view.csrf_exempt = True  # type: ignore[attr-defined]
    view.login_required = False  # type: ignore[attr-defined]
    return view


def _answer(request, handlers, kwargs) -> HttpResponse:
    try:
        checked = _checks(request, handlers)
        if isinstance(checked, HttpResponse):
            return checked
        request.json = _json_body(request) if request.method in MUTATING_METHODS else {}
        result = checked(request, **kwargs)
        return result if isinstance(result, HttpResponse) else JsonResponse(result)
    except ApiError as exc:
        return problem(exc.slug, exc.detail, **exc.extra)
    except RedisUnavailableError as exc:
        return problem("redis_unavailable", str(exc))
    except WrongTypeError as exc:
        return problem("wrong_type", f"{exc}: the data there was not written by Wurk or "
                       "Sidekiq; inspect it with redis-cli TYPE and remove or rename it.")
    except Exception as exc:
        # The API speaks problem JSON to the end, never Django's HTML error page; the
        # traceback goes to the log, where the operator can read it.
        logger.exception("Wurk dashboard: %s %s failed", request.method, request.path)
        return problem("server_error", f"{type(exc).__name__}: the error is in the server "
                       "log (logger 'wurk').")
