"""The only reader of `settings.WURK`: validates it and builds the core `Config`."""

import difflib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from django.conf import settings

from .core.config import Config
from .core.errors import ConfigurationError

ENV_REDIS_URL = "WURK_REDIS_URL"
EMBEDDED_URL = "embedded"
DEFAULT_RESULT_TTL_S = 86_400

# WURK key -> (Config field, converter). A converter may raise ConfigurationError.
def _seconds(name):
    def convert(value):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise ConfigurationError(f"WURK['{name}'] must be a number of seconds >= 0, "
                                     f"got {value!r}")
        return value
    return convert


def _as_list(name):
    def convert(value):
        if isinstance(value, str) or not isinstance(value, (list, tuple)):
            raise ConfigurationError(f"WURK['{name}'] must be a list, got {value!r}")
        return tuple(value)
    return convert


def _identity(value):
    return value


def _capsules(value):
    if not isinstance(value, Mapping):
        raise ConfigurationError("WURK['CAPSULES'] must be a dict of name -> "
                                 "{'CONCURRENCY': n, 'QUEUES': [...]}")
    return {name: {key.lower(): item for key, item in spec.items()}
            for name, spec in value.items()}


FIELDS: dict[str, tuple[str, Any]] = {
    "CONCURRENCY": ("concurrency", _identity),
    "QUEUES": ("queues", _as_list("QUEUES")),
    "CAPSULES": ("capsules", _capsules),
    "TIMEOUT": ("shutdown_timeout_s", _seconds("TIMEOUT")),
    "TAG": ("tag", str),
    "LABELS": ("labels", lambda v: frozenset(_as_list("LABELS")(v))),
    "FETCH": ("fetch", _identity),
    "POLL_INTERVAL_AVERAGE": ("poll_interval_average_s", _seconds("POLL_INTERVAL_AVERAGE")),
    "AVERAGE_SCHEDULED_POLL_INTERVAL": ("average_scheduled_poll_interval_s",
                                        _seconds("AVERAGE_SCHEDULED_POLL_INTERVAL")),
    "HEARTBEAT_INTERVAL": ("heartbeat_interval_s", _seconds("HEARTBEAT_INTERVAL")),
    "REAPER_INTERVAL": ("reaper_interval_s", _seconds("REAPER_INTERVAL")),
    "MAX_RETRIES": ("max_retries", _identity),
    "DEAD_MAX_JOBS": ("dead_max_jobs", _identity),
    "DEAD_TIMEOUT": ("dead_timeout_in_seconds", _identity),
    "ON_COMPLEX_ARGUMENTS": ("on_complex_arguments", _identity),
    "DEFAULT_JOB_OPTIONS": ("default_job_options", dict),
    "SKIP_DEFAULT_JOB_LOGGING": ("skip_default_job_logging", bool),
    "LOGGED_JOB_ATTRIBUTES": ("logged_job_attributes", _as_list("LOGGED_JOB_ATTRIBUTES")),
    "VERBOSE": ("verbose", bool),
    "REDIS_OPTIONS": ("redis_options", dict),
    "REDIS_POOL_SIZE": ("redis_pool_size", _identity),
    "CRON": ("cron_entries", _as_list("CRON")),
    "CRON_TZ": ("cron_tz", _identity),
    "CRON_TICK_SECONDS": ("cron_tick_s", _seconds("CRON_TICK_SECONDS")),
    "LEADER_TTL_SECONDS": ("leader_ttl_s", _seconds("LEADER_TTL_SECONDS")),
    "LEADER_RENEW_SECONDS": ("leader_renew_s", _seconds("LEADER_RENEW_SECONDS")),
    "LEADER_RETRY_SECONDS": ("leader_retry_s", _seconds("LEADER_RETRY_SECONDS")),
    "TIMESTAMP_FORMAT": ("timestamp_format", _identity),
}
# Keys read elsewhere in the Django layer (not Config fields).
OTHER_KEYS = {"REDIS_URL", "CACHE_ALIAS", "DASHBOARD", "EMBEDDED", "TRANSACTIONAL",
              "LOG_FORMAT", "RESULT_TTL", "PROCESSES", "MAX_MEMORY_MB"}
KNOWN_KEYS = set(FIELDS) | OTHER_KEYS


def wurk_settings() -> dict:
    value = getattr(settings, "WURK", None) or {}
    if not isinstance(value, Mapping):
        raise ConfigurationError(f"settings.WURK must be a dict, got {type(value).__name__}")
    return dict(value)


def unknown_keys(wurk: Mapping) -> list[tuple[str, str | None]]:
    """Unknown WURK keys, each with the closest known key (for a "did you mean" hint)."""
    found = []
    for key in wurk:
        if key not in KNOWN_KEYS:
            close = difflib.get_close_matches(str(key).upper(), KNOWN_KEYS, n=1)
            found.append((key, close[0] if close else None))
    return found


def project_dir() -> Path:
    """The Django project's folder: `BASE_DIR` if the settings define it, else the cwd."""
    base = getattr(settings, "BASE_DIR", None)
    return Path(base) if base else Path.cwd()


def redis_settings(wurk: Mapping) -> tuple[str, dict]:
    """The Redis URL and extra connection options, by precedence:
    env WURK_REDIS_URL, then WURK['REDIS_URL'], then WURK['CACHE_ALIAS'], then env
    REDIS_URL, then redis://localhost:6379/0."""
    url = os.environ.get(ENV_REDIS_URL) or wurk.get("REDIS_URL")
    if url:
        return str(url), {}
    alias = wurk.get("CACHE_ALIAS")
    if alias:
        return cache_redis_settings(alias)
    return os.environ.get("REDIS_URL") or "redis://localhost:6379/0", {}


def cache_redis_settings(alias: str) -> tuple[str, dict]:
    """Reuse a django-redis cache's LOCATION and connection options."""
    caches = getattr(settings, "CACHES", {})
    if alias not in caches:
        raise ConfigurationError(f"WURK['CACHE_ALIAS'] names cache {alias!r}, which is not in "
                                 f"CACHES (known: {', '.join(caches) or 'none'})")
    cache = caches[alias]
    location = cache.get("LOCATION")
    if isinstance(location, (list, tuple)):
        location = location[0] if location else None
    if not isinstance(location, str) or not location.startswith(("redis://", "rediss://",
                                                                  "unix://")):
        raise ConfigurationError(f"cache {alias!r} is not a Redis cache with a redis:// "
                                 f"LOCATION, so WURK['CACHE_ALIAS'] cannot reuse it")
    cache_options = cache.get("OPTIONS", {})
    options = dict(cache_options.get("CONNECTION_POOL_KWARGS", {}))
    if cache_options.get("PASSWORD"):
        options["password"] = cache_options["PASSWORD"]
    if cache_options.get("SOCKET_CONNECT_TIMEOUT"):
        options["socket_connect_timeout"] = cache_options["SOCKET_CONNECT_TIMEOUT"]
    return location, options


def transactional_default(wurk: Mapping | None = None) -> bool:
    wurk = wurk_settings() if wurk is None else wurk
    return bool(wurk.get("TRANSACTIONAL", True))


def result_ttl_s(wurk: Mapping | None = None) -> int:
    wurk = wurk_settings() if wurk is None else wurk
    return int(wurk.get("RESULT_TTL", DEFAULT_RESULT_TTL_S))


def config_options(wurk: Mapping) -> dict:
    """Translate WURK keys into `Config` keyword arguments (no Redis contacted)."""
    options: dict[str, Any] = {}
    for key, (field, convert) in FIELDS.items():
        if key in wurk:
            options[field] = convert(wurk[key])
    url, redis_options = redis_settings(wurk)
    options["redis_url"] = url
    if redis_options:
        options["redis_options"] = {**redis_options, **options.get("redis_options", {})}
    options.setdefault("tag", project_dir().name)
    return options


def build_config(*, resolve_embedded: bool = True, **overrides) -> Config:
    """Build the core Config from settings; `overrides` (Config fields) win.

    An "embedded" URL starts (or attaches to) the project's private redis-server and
    becomes its unix socket URL, so every process of the project shares one server.
    System checks pass `resolve_embedded=False`: checking must not start a server.
    """
    from .db import close_db_connections_around, defer_until_commit
    options = config_options(wurk_settings())
    options.update(reloader=close_db_connections_around, push_deferrer=defer_until_commit)
    options.update(overrides)
    if resolve_embedded and options["redis_url"] == EMBEDDED_URL:
        from .core.embedded_redis import ensure_server, project_folder
        options["redis_url"] = ensure_server(project_folder(project_dir()))
    return Config(**options)


# --- the dashboard (WURK["DASHBOARD"]) ---------------------------------------------

ENV_DASHBOARD_READ_ONLY = "WURK_DASHBOARD_READ_ONLY"
DASHBOARD_KEYS = {"READ_ONLY", "REQUIRE_VIEW_PERMISSION", "POLL_INTERVAL", "ASSET_URL",
                  "BUNDLE_DIR"}
POLL_CHOICES_S = (0, 2, 5, 10, 20, 60)
CSP_MIDDLEWARE = "django.middleware.csp.ContentSecurityPolicyMiddleware"


@dataclass(frozen=True)
class DashboardSettings:
    """What the dashboard needs from settings, read per request so tests can override it.

    `bundle_dir` is the built SPA (default: the package's static/wurk/); `asset_url`
    switches to serving it from the host's STATIC_URL instead (spec §3.3).
    """

    read_only: bool = False
    require_view_permission: bool = False
    poll_interval_s: int = 5
    asset_url: str | None = None
    bundle_dir: Path = Path(__file__).resolve().parent / "static" / "wurk"
    static_url: str = "/static/"
    debug: bool = False
    csrf_header_name: str = "HTTP_X_CSRFTOKEN"
    csrf_cookie_name: str = "csrftoken"
    csp_middleware: bool = False


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def dashboard_settings(wurk: Mapping | None = None) -> DashboardSettings:
    """Read WURK["DASHBOARD"]; env WURK_DASHBOARD_READ_ONLY=1 forces read-only mode."""
    wurk = wurk_settings() if wurk is None else wurk
    options = wurk.get("DASHBOARD") or {}
    if not isinstance(options, Mapping):
        raise ConfigurationError("WURK['DASHBOARD'] must be a dict, e.g. {'READ_ONLY': True}")
    unknown = sorted(set(options) - DASHBOARD_KEYS)
    if unknown:
        raise ConfigurationError(f"unknown WURK['DASHBOARD'] keys {unknown}; known: "
                                 f"{', '.join(sorted(DASHBOARD_KEYS))}")
    poll = options.get("POLL_INTERVAL", 5)
    if poll not in POLL_CHOICES_S or isinstance(poll, bool):
        raise ConfigurationError(f"WURK['DASHBOARD']['POLL_INTERVAL'] must be one of "
                                 f"{POLL_CHOICES_S} seconds (0 = paused), got {poll!r}")
    bundle = options.get("BUNDLE_DIR")
    return DashboardSettings(
        read_only=bool(options.get("READ_ONLY", False)) or _env_flag(ENV_DASHBOARD_READ_ONLY),
        require_view_permission=bool(options.get("REQUIRE_VIEW_PERMISSION", False)),
        poll_interval_s=poll, asset_url=options.get("ASSET_URL") or None,
        bundle_dir=Path(bundle) if bundle else DashboardSettings.bundle_dir,
        static_url=str(settings.STATIC_URL or "/static/"),
        debug=bool(settings.DEBUG),
        csrf_header_name=settings.CSRF_HEADER_NAME,
        csrf_cookie_name=settings.CSRF_COOKIE_NAME,
        csp_middleware=CSP_MIDDLEWARE in getattr(settings, "MIDDLEWARE", ()))
