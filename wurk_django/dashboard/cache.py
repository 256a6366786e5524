"""The dashboard's Cache-Control rules, as one pure function and a view decorator.

No Django or WhiteNoise imports: settings modules may import the WhiteNoise hooks
built on this (`whitenoise_hooks.py`).
"""

import functools

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
