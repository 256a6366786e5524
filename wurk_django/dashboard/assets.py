"""The SPA bundle: served by WhiteNoise's file machinery, and its Vite manifest.

`cache.cache_control_for` decides every directive; WhiteNoise supplies
ETags, 304s, ranges and pre-compressed variants, and already limits which answers
carry the file's headers.
"""

import json
import threading

from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIRequest
from django.http import FileResponse, HttpResponse, HttpResponseBase, HttpResponseNotFound
from django.views.decorators.csrf import csrf_exempt
from whitenoise.base import WhiteNoise

from .. import conf
from .cache import cache_control_for, kind_of

MANIFEST_PATHS = (".vite/manifest.json", "manifest.json")  # Vite 5+ first
CHUNK_BYTES = 64 * 1024


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


def django_response(served, asgi: bool) -> HttpResponseBase:
    """Turn a WhiteNoise Response into Django's, as WhiteNoise's middleware does; under
    ASGI the body is read by an async iterator so Django need not buffer it."""
    status = int(served.status)
    response: HttpResponseBase
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


# The bundle holds no data (as in Sidekiq). A function attribute the type checker cannot see.
serve_asset.login_required = False  # type: ignore[attr-defined]


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
    css: list[str] = []
    preloads: list[str] = []
    seen: set[str] = set()

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
