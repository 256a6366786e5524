"""The SPA bundle: serving it with WhiteNoise's file machinery, and the Cache-Control rules.

One pure function, `cache_control_for`, decides every directive the dashboard
writes (spec §3.1); WhiteNoise supplies ETags, 304s, ranges and pre-compressed
variants, and already limits which answers carry the file's headers (§3.3).
"""

import functools
import json
import re
import threading
from urllib.parse import urlsplit

from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIRequest
from django.http import FileResponse, HttpResponse, HttpResponseNotFound
from django.views.decorators.csrf import csrf_exempt
from whitenoise.base import WhiteNoise

from .. import conf

HASHED, STABLE, SHELL, API = "hashed", "stable", "shell", "api"
DIRECTIVES = {
    HASHED: "public, max-age=31536000, immutable",
    STABLE: "public, no-cache",
    SHELL: "public, no-cache",
    API: "no-store",
}
CACHEABLE_METHODS = ("GET", "HEAD")
# Never 405 (cacheable by default, RFC 9110 §15.5.6), 404, 416 or redirects.
CACHEABLE_STATUSES = (200, 206, 304)
MANIFEST_PATHS = (".vite/manifest.json", "manifest.json")  # Vite 5+ first
# What WhiteNoise writes itself: `max-age=<n>, public` and `max-age=<n>, public, immutable`.
_WHITENOISE_VALUE = re.compile(r"^max-age=\d+, public(, immutable)?$")
# Django's manifest storage: `name.<12 hex>.ext`.
_DJANGO_HASHED = re.compile(r"\.[0-9a-f]{12}\.[^/.]+$")
CHUNK_BYTES = 64 * 1024


def cache_control_for(method: str, status: int, kind: str, existing: str | None) -> str | None:
    """The Cache-Control value to add, or None to add nothing.

    A value only for GET/HEAD answered 200, 206 or 304 that has no Cache-Control yet.
    """
    if existing is not None or method not in CACHEABLE_METHODS:
        return None
    if status not in CACHEABLE_STATUSES:
        return None
    return DIRECTIVES[kind]


def with_cache_control(kind: str):
    """Decorate a view: stamp its answer by `cache_control_for`, keeping any set value."""
    def decorator(view):
        def wrapped(request, *args, **kwargs):
            response = view(request, *args, **kwargs)
            value = cache_control_for(request.method, response.status_code, kind,
                                      response.get("Cache-Control"))
            if value:
                response["Cache-Control"] = value
            return response

        functools.update_wrapper(wrapped, view)
        return wrapped
    return decorator


def kind_of(relative_url: str) -> str:
    """Files under `assets/` carry a content hash in their names; nothing else does."""
    return HASHED if relative_url.startswith("assets/") else STABLE


def wurk_add_headers(headers, path: str, url: str) -> None:
    """WhiteNoise's `add_headers_function` for Wurk's own instance (built with no
    Cache-Control of its own): fill the empty slot by kind."""
    value = cache_control_for("GET", 200, kind_of(url.lstrip("/")), headers.get("Cache-Control"))
    if value:
        headers["Cache-Control"] = value


# --- Wurk serves its own files at <mount>static/ ----------------------------------

_bundles: dict = {}
_bundles_lock = threading.Lock()


def bundle_files(settings: conf.DashboardSettings | None = None) -> WhiteNoise:
    """The WhiteNoise instance for the bundle directory, built once per directory.

    `max_age=None` and no immutable test: WhiteNoise writes no Cache-Control, and
    `wurk_add_headers` writes ours. `index_file` stays off: it answers with 302s that
    carry `max-age`. With DEBUG, files are looked up per request so rebuilds show.
    """
    settings = settings or conf.dashboard_settings()
    key = (str(settings.bundle_dir), settings.debug)
    with _bundles_lock:
        files = _bundles.get(key)
        if files is None:
            files = WhiteNoise(None, max_age=None, index_file=None, autorefresh=settings.debug,
                               add_headers_function=wurk_add_headers)
            if settings.debug or settings.bundle_dir.is_dir():
                files.add_files(str(settings.bundle_dir), prefix="/")
            _bundles[key] = files
        return files


def reset_caches() -> None:
    """Forget built file tables and manifests (tests that swap the bundle directory)."""
    with _bundles_lock:
        _bundles.clear()
        _manifests.clear()


class _BundleFileResponse(FileResponse):
    """WhiteNoise has set every header; Django's FileResponse must not add its own."""

    def set_headers(self, filelike):
        pass


async def _read_async(file):
    try:
        while True:
            chunk = await sync_to_async(file.read, thread_sensitive=False)(CHUNK_BYTES)
            if not chunk:
                return
            yield chunk
    finally:
        file.close()


def django_response(served, asgi: bool) -> HttpResponse:
    """Turn a WhiteNoise Response into Django's, as WhiteNoise's middleware does; under
    ASGI the body is read by an async iterator so Django need not buffer it."""
    status = int(served.status)
    if served.file is None:
        response = HttpResponse(status=status)
    elif asgi:
        response = _BundleFileResponse(_read_async(served.file), status=status)
    else:
        response = _BundleFileResponse(served.file, status=status)
    del response["Content-Type"]
    for name, value in served.headers:
        response[name] = value
    return response


@csrf_exempt  # it never mutates; otherwise a POST would get CSRF's 403, not WhiteNoise's 405
def serve_asset(request, path: str = ""):
    """One bundle file with WhiteNoise's answers (ETag, 304, Range, gzip/brotli, 405)."""
    settings = conf.dashboard_settings()
    files = bundle_files(settings)
    url = "/" + path
    static_file = files.find_file(url) if settings.debug else files.files.get(url)
    if static_file is None:
        return HttpResponseNotFound("Not found", content_type="text/plain")
    served = static_file.get_response(request.method, request.META)
    return django_response(served, isinstance(request, ASGIRequest))


serve_asset.login_required = False  # the bundle holds no data (as in Sidekiq)


# --- the manifest: which files the shell loads ------------------------------------

_manifests: dict = {}


def load_manifest(settings: conf.DashboardSettings | None = None) -> dict | None:
    """Vite's manifest read from disk (never over HTTP); None when the bundle is absent."""
    settings = settings or conf.dashboard_settings()
    for relative in MANIFEST_PATHS:
        path = settings.bundle_dir / relative
        try:
            mtime = path.stat().st_mtime_ns
        except OSError:
            continue
        cached = _manifests.get(str(path))
        if cached is None or cached[0] != mtime:
            try:
                cached = _manifests[str(path)] = (mtime, json.loads(path.read_text("utf-8")))
            except (OSError, ValueError):
                return None
        return cached[1] if isinstance(cached[1], dict) else None
    return None


def entry_files(manifest: dict) -> dict | None:
    """The entry chunk's script, the chunks it imports (to preload) and every CSS file,
    as Vite's backend-integration guide lists them; None without an entry."""
    entry = next((name for name, chunk in manifest.items()
                  if isinstance(chunk, dict) and chunk.get("isEntry")), None)
    if entry is None or not manifest[entry].get("file"):
        return None
    css, preloads, seen = [], [], set()

    def walk(name, is_entry):
        if name in seen or not isinstance(manifest.get(name), dict):
            return
        seen.add(name)
        chunk = manifest[name]
        for imported in chunk.get("imports", []):
            walk(imported, False)
        if not is_entry and chunk.get("file"):
            preloads.append(chunk["file"])
        css.extend(file for file in chunk.get("css", []) if file not in css)

    walk(entry, True)
    return {"script": manifest[entry]["file"], "preloads": preloads, "css": css}


# --- option: the host serves the bundle from STATIC_URL ---------------------------

def _bundle_prefix() -> str:
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
