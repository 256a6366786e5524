"""Hooks for a host that serves the bundle from its own STATIC_URL.

    from wurk_django.dashboard import whitenoise_hooks
    WHITENOISE_IMMUTABLE_FILE_TEST = whitenoise_hooks.make_immutable_file_test()
    WHITENOISE_ADD_HEADERS_FUNCTION = whitenoise_hooks.make_add_headers()

Safe to import from a settings module: settings are read only when WhiteNoise calls
the hooks. Each factory takes the host's own hook and runs it for other files.
"""

import re
from urllib.parse import urlsplit

from .cache import HASHED, cache_control_for, kind_of

# What WhiteNoise writes itself: `max-age=<n>, public` and `max-age=<n>, public, immutable`.
_WHITENOISE_VALUE = re.compile(r"^max-age=\d+, public(, immutable)?$")
# Django's manifest storage names: `name.<12 hex>.ext`.
_DJANGO_HASHED = re.compile(r"\.[0-9a-f]{12}\.[^/.]+$")


def _bundle_prefix() -> str:
    from .. import conf
    settings = conf.dashboard_settings()
    return urlsplit(settings.asset_url or settings.static_url + "wurk/").path


def _static_kind(url: str) -> str | None:
    prefix = _bundle_prefix()
    return kind_of(url[len(prefix):]) if url.startswith(prefix) else None


def make_immutable_file_test(host=None):
    """A WHITENOISE_IMMUTABLE_FILE_TEST: Wurk's `assets/` files are immutable; any other
    URL goes to `host` (a callable or a regex), else to Django's hashed-name rule."""
    if isinstance(host, str):
        host_regex = re.compile(host)
        host = lambda path, url: bool(host_regex.search(url))  # noqa: E731

    def immutable_file_test(path, url):
        kind = _static_kind(url)
        if kind is not None:
            return kind == HASHED
        return host(path, url) if host else bool(_DJANGO_HASHED.search(url))
    return immutable_file_test


def make_add_headers(host=None):
    """A WHITENOISE_ADD_HEADERS_FUNCTION running `host` first; on Wurk's files it then
    replaces a value in WhiteNoise's own format and keeps any other (the host's)."""
    def add_headers(headers, path, url):
        if host:
            host(headers, path, url)
        kind = _static_kind(url)
        if kind is None:
            return
        existing = headers.get("Cache-Control")
        if existing is not None and _WHITENOISE_VALUE.match(existing):
            del headers["Cache-Control"]
            existing = None
        value = cache_control_for("GET", 200, kind, existing)
        if value:
            headers["Cache-Control"] = value
    return add_headers


immutable_file_test = make_immutable_file_test()
add_headers = make_add_headers()
