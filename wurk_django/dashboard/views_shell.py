"""The HTML shell: one page, identical for every user, that loads the SPA.

Per-user data (name, permissions, CSRF token) comes from `api/meta`, so the page
can be `public, no-cache`: a shared cache learns nothing private and revalidates
with the origin on every use.
"""

import hashlib

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.http import (
    HttpResponse,
    HttpResponseNotAllowed,
    HttpResponseNotModified,
    HttpResponseRedirect,
)
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.http import parse_etags
from django.utils.translation import get_language, get_language_bidi
from django.views.decorators.csrf import csrf_exempt

from .. import conf
from ..core.version import VERSION
from .assets import entry_files, load_manifest
from .auth import can_view
from .cache import SHELL, with_cache_control

CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "object-src 'none'; base-uri 'self'; frame-ancestors 'self'")
# The same policy in the shape Django 6's CSP middleware takes for a per-view override.
CSP_CONFIG = {"default-src": ["'self'"], "script-src": ["'self'"], "style-src": ["'self'"],
              "img-src": ["'self'", "data:"], "object-src": ["'none'"],
              "base-uri": ["'self'"], "frame-ancestors": ["'self'"]}


def csrf_header(meta_name: str) -> str:
    """Django names the header by its META key (`HTTP_X_CSRFTOKEN`); browsers send `X-CSRFTOKEN`."""
    name = meta_name[5:] if meta_name.startswith("HTTP_") else meta_name
    return name.replace("_", "-")


def shell_config(settings: conf.DashboardSettings) -> dict:
    """What the SPA needs before its first API call; nothing here depends on the user."""
    mount = reverse("wurk:shell")
    return {
        "mount": mount,
        "api": mount + "api/",
        "assets": settings.asset_url or mount + "static/",
        "read_only": settings.read_only,
        # Per-user values: always null here, read from api/meta (keeps the page public).
        "user": None,
        "can_change": None,
        "csrf_header": csrf_header(settings.csrf_header_name),
        "poll_default": settings.poll_interval_s,
        "version": VERSION,
        "language": get_language(),
    }


def render_shell() -> bytes:
    settings = conf.dashboard_settings()
    config = shell_config(settings)
    manifest = load_manifest(settings)
    files = entry_files(manifest) if manifest else None
    base = config["assets"]
    context = {
        "config": config,
        "language": get_language() or "en",
        "bidi": get_language_bidi(),
        "bundle": files and {
            "script": base + files["script"],
            "preloads": [base + name for name in files["preloads"]],
            "css": [base + name for name in files["css"]],
        },
    }
    # No request: context processors would add the user, CSRF token and messages.
    return render_to_string("wurk/shell.html", context).encode("utf-8")


def _set_csp(response: HttpResponse, settings: conf.DashboardSettings) -> None:
    if settings.csp_middleware:
        # Django 6's middleware reads this override.
        response._csp_config = CSP_CONFIG  # type: ignore[attr-defined]
    elif "Content-Security-Policy" not in response:
        response["Content-Security-Policy"] = CSP


@with_cache_control(SHELL)
def shell(request, path: str = ""):
    """Login (admin_view) → method → conditional GET (strong ETag of the bytes) → render."""
    if request.method not in ("GET", "HEAD"):
        return HttpResponseNotAllowed(["GET", "HEAD"])
    if not can_view(request.user):
        raise PermissionDenied  # staff without wurk.view_dashboard, when it is required
    body = render_shell()
    etag = f'"{hashlib.sha256(body).hexdigest()[:32]}"'
    matches = parse_etags(request.headers.get("If-None-Match", ""))
    if etag in matches or "*" in matches:
        response: HttpResponse = HttpResponseNotModified()
        response["ETag"] = etag
        return response
    response = HttpResponse(body, content_type="text/html; charset=utf-8")
    response["ETag"] = etag
    _set_csp(response, conf.dashboard_settings())
    return response


shell.wurk_shell = True  # lets the system check recognise this view behind its wrappers
shell.login_required = False  # admin_view sends anonymous users to the admin login
# csrf_exempt: the shell never mutates, and admin_view would otherwise add CSRF
# protection and turn a POST into 403 instead of 405. cacheable=True: admin_view's
# default never_cache would overwrite the required Cache-Control.
shell_view = admin.site.admin_view(csrf_exempt(shell), cacheable=True)


def _redirect_to_shell(request):
    return HttpResponseRedirect(reverse("wurk:shell"))


# admin_view sends anonymous users to its login.
_redirect_to_shell.login_required = False  # type: ignore[attr-defined]


admin_redirect_view = admin.site.admin_view(_redirect_to_shell)
