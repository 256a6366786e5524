"""The only reader of `settings.WURK`: every key is parsed here, once.

The values themselves are checked where they are used, by the core `Config` and
`ProcessOptions`; their errors name a Config field, which this module turns back into
the WURK key (or the environment variable, or the flag) the user actually wrote.
"""

import difflib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings

from .core.config import Config, ProcessOptions
from .core.errors import ConfigurationError
from .core.sizing import with_environment

ENV_REDIS_URL = "WURK_REDIS_URL"
# REDIS_URL's word for the project Redis (core/project_redis.py), a private server.
PROJECT_REDIS_URL = "embedded"
DEFAULT_RESULT_TTL_S = 86_400
EMBEDDED_KEYS = {"CONCURRENCY": "concurrency", "QUEUES": "queues"}
PROCESS_KEYS = {"PROCESSES": "processes", "MAX_MEMORY_MB": "max_memory_mb",
                "LOG_FORMAT": "log_format"}


class SettingError(ConfigurationError):
    """A WURK key is invalid; `key` names it, so the system checks can pick their id."""

    def __init__(self, message: str, key: str | None = None, *, field: str | None = None):
        super().__init__(message, field=field)
        self.key = key


def _capsules(value):
    # Only the shape changes here (WURK's upper-case keys); Config checks the rest.
    if not isinstance(value, Mapping):
        return value
    return {name: {str(key).lower(): item for key, item in spec.items()}
            if isinstance(spec, Mapping) else spec for name, spec in value.items()}


# WURK key -> Config field (and, for CAPSULES, a change of shape).
FIELDS: dict[str, str] = {
    "CONCURRENCY": "concurrency", "QUEUES": "queues", "CAPSULES": "capsules",
    "TIMEOUT": "shutdown_timeout_s", "TAG": "tag", "LABELS": "labels", "FETCH": "fetch",
    "POLL_INTERVAL_AVERAGE": "poll_interval_average_s",
    "AVERAGE_SCHEDULED_POLL_INTERVAL": "average_scheduled_poll_interval_s",
    "HEARTBEAT_INTERVAL": "heartbeat_interval_s", "REAPER_INTERVAL": "reaper_interval_s",
    "MAX_RETRIES": "max_retries", "DEAD_MAX_JOBS": "dead_max_jobs",
    "DEAD_TIMEOUT": "dead_timeout_in_seconds", "ON_COMPLEX_ARGUMENTS": "on_complex_arguments",
    "DEFAULT_JOB_OPTIONS": "default_job_options",
    "SKIP_DEFAULT_JOB_LOGGING": "skip_default_job_logging",
    "LOGGED_JOB_ATTRIBUTES": "logged_job_attributes", "VERBOSE": "verbose",
    "REDIS_OPTIONS": "redis_options", "REDIS_POOL_SIZE": "redis_pool_size",
    "CRON": "cron_entries", "CRON_TZ": "cron_tz", "CRON_TICK_SECONDS": "cron_tick_s",
    "LEADER_TTL_SECONDS": "leader_ttl_s", "LEADER_RENEW_SECONDS": "leader_renew_s",
    "LEADER_RETRY_SECONDS": "leader_retry_s", "TIMESTAMP_FORMAT": "timestamp_format",
    "METRICS_PORT": "metrics_port", "METRICS_ADDRESS": "metrics_address", "STATSD": "statsd",
    "STATSD_JOB_METRICS": "statsd_job_metrics", "STATSD_OPTIONS": "statsd_options",
    "OPENTELEMETRY": "opentelemetry", "RETAIN_HISTORY": "retain_history_s",
    "HISTORY_COLLECTOR": "history_collector",
    "HEALTH_PORT": "health_port", "HEALTH_ADDRESS": "health_address",
    "RELIABLE_PUSH": "reliable_push", "RELIABLE_SCHEDULER": "reliable_scheduler",
    "ENCRYPTION": "encryption",
}


def _lower_keys(value):
    # {"BUFFER": 1000} -> {"buffer": 1000}; Config checks the values and names the keys.
    if not isinstance(value, Mapping):
        return value
    return {str(key).lower(): item for key, item in value.items()}


SHAPES = {"CAPSULES": _capsules, "RELIABLE_PUSH": _lower_keys, "ENCRYPTION": _lower_keys}
KEY_OF_FIELD: dict[str | None, str] = {field: key for key, field in FIELDS.items()}
CRON_ENTRY = re.compile(r"^cron entry (\d+)")  # how the core names an item of cron_entries
# Keys of the Django layer itself (no Config field).
OTHER_KEYS = {"REDIS_URL", "CACHE_ALIAS", "DASHBOARD", "EMBEDDED", "TRANSACTIONAL",
              "RESULT_TTL", "METRICS", "PROBES", *PROCESS_KEYS}
KNOWN_KEYS = set(FIELDS) | OTHER_KEYS


@dataclass(frozen=True)
class WurkSettings:
    """Every WURK key, read once: Config's options and the Django layer's own values."""

    config_options: dict
    labels: dict  # Config field -> what the user wrote it as, for error messages
    transactional: bool = True
    project_redis: bool = False  # REDIS_URL = "embedded": the project Redis, on demand
    embedded: dict | None = None  # the embedded worker's Config overrides; None: off


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


def redis_settings(wurk: Mapping) -> tuple[str, dict, str]:
    """The Redis URL, extra connection options and where the URL came from, by
    precedence: env WURK_REDIS_URL, WURK['REDIS_URL'], WURK['CACHE_ALIAS'], env
    REDIS_URL, then redis://localhost:6379/0."""
    if os.environ.get(ENV_REDIS_URL):
        return os.environ[ENV_REDIS_URL], {}, f"the {ENV_REDIS_URL} environment variable"
    if wurk.get("REDIS_URL"):
        return wurk["REDIS_URL"], {}, "WURK['REDIS_URL']"
    alias = wurk.get("CACHE_ALIAS")
    if alias:
        url, options = cache_redis_settings(alias)
        return url, options, f"CACHES[{alias!r}]['LOCATION'] (WURK['CACHE_ALIAS'])"
    if os.environ.get("REDIS_URL"):
        return os.environ["REDIS_URL"], {}, "the REDIS_URL environment variable"
    return "redis://localhost:6379/0", {}, "the default Redis URL"


def cache_redis_settings(alias: str) -> tuple[str, dict]:
    """Reuse a django-redis cache's LOCATION and connection options."""
    caches = getattr(settings, "CACHES", {})
    if not isinstance(alias, str) or alias not in caches:
        raise SettingError(f"WURK['CACHE_ALIAS'] names cache {alias!r}, which is not in "
                           f"CACHES (known: {', '.join(caches) or 'none'})", "CACHE_ALIAS")
    cache = caches[alias]
    location = cache.get("LOCATION")
    if isinstance(location, (list, tuple)):
        location = location[0] if location else None
    if not isinstance(location, str) or not location.startswith(("redis://", "rediss://",
                                                                  "unix://")):
        raise SettingError(f"cache {alias!r} is not a Redis cache with a redis:// LOCATION, "
                           f"so WURK['CACHE_ALIAS'] cannot reuse it", "CACHE_ALIAS")
    cache_options = cache.get("OPTIONS", {})
    options = dict(cache_options.get("CONNECTION_POOL_KWARGS", {}))
    if cache_options.get("PASSWORD"):
        options["password"] = cache_options["PASSWORD"]
    if cache_options.get("SOCKET_CONNECT_TIMEOUT"):
        options["socket_connect_timeout"] = cache_options["SOCKET_CONNECT_TIMEOUT"]
    return location, options


def transactional_setting(wurk: Mapping) -> bool:
    value = wurk.get("TRANSACTIONAL", True)
    if not isinstance(value, bool):
        raise SettingError(f"WURK['TRANSACTIONAL'] must be True or False, got {value!r}",
                           "TRANSACTIONAL")
    return value


def result_ttl_s(wurk: Mapping | None = None) -> int:
    """WURK['RESULT_TTL']: seconds django.tasks results are kept (default one day)."""
    wurk = wurk_settings() if wurk is None else wurk
    value = wurk.get("RESULT_TTL", DEFAULT_RESULT_TTL_S)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise SettingError(f"WURK['RESULT_TTL'] must be a whole number of seconds >= 1, "
                           f"got {value!r}", "RESULT_TTL")
    return value


def embedded_overrides(wurk: Mapping) -> dict | None:
    """Config overrides asked for by `WURK["EMBEDDED"]`, or None when it is off."""
    value = wurk.get("EMBEDDED", False)
    if value is True:
        return {}
    if not value:
        return None
    if not isinstance(value, Mapping) or set(value) - set(EMBEDDED_KEYS):
        raise SettingError(f"WURK['EMBEDDED'] must be True, False or a dict with "
                           f"{' and/or '.join(EMBEDDED_KEYS)}, got {value!r}", "EMBEDDED")
    return {EMBEDDED_KEYS[key]: item for key, item in value.items()}


def read_settings(wurk: Mapping | None = None) -> WurkSettings:
    """Parse every WURK key (no Redis contacted, no Config built yet)."""
    wurk = wurk_settings() if wurk is None else wurk
    options: dict[str, Any] = {}
    labels = {}
    for key, field in FIELDS.items():
        if key in wurk:
            options[field] = SHAPES.get(key, _same)(wurk[key])
            labels[field] = f"WURK['{key}']"
    url, redis_options, labels["redis_url"] = redis_settings(wurk)
    options["redis_url"] = url
    if redis_options:
        options["redis_options"] = {**redis_options, **(options.get("redis_options") or {})}
    options.setdefault("tag", project_dir().name)
    result_ttl_s(wurk)
    metrics_endpoint(wurk)
    probe_settings(wurk)
    process_options(wurk)
    return WurkSettings(options, labels, transactional=transactional_setting(wurk),
                        project_redis=url == PROJECT_REDIS_URL,
                        embedded=embedded_overrides(wurk))


def _same(value):
    return value


def config_error(exc: ConfigurationError, labels: Mapping) -> SettingError:
    """The Config's error told with the setting the failing field came from."""
    label = labels.get(exc.field)
    text = str(exc)
    renamed: str | ConfigurationError
    entry = CRON_ENTRY.match(text) if exc.field == "cron_entries" else None
    if entry and label:
        renamed = f"{label}[{entry.group(1)}]{text[entry.end():]}"  # WURK['CRON'][1] (task)
    else:
        renamed = exc.renamed(label) if label else exc
    key = KEY_OF_FIELD.get(exc.field) if label and label.startswith("WURK[") else None
    if exc.field == "redis_url":
        key = "REDIS_URL"
    return SettingError(str(renamed), key, field=exc.field)


def load(*, start_project_redis: bool = True, sources: Mapping | None = None,
         **overrides) -> tuple[WurkSettings, Config]:
    """Parse the settings and build the core Config; `overrides` (Config fields) win,
    and `sources` says how to name them in errors (e.g. {"concurrency": "--concurrency"}).

    An "embedded" URL starts (or attaches to) the project Redis and becomes its unix
    socket URL, so every process of the project shares one server. System checks pass
    `start_project_redis=False`: checking must not start a server.
    """
    from .db import close_db_connections_around, commit_deferrer
    parsed = read_settings()
    options = dict(parsed.config_options)
    options.update(reloader=close_db_connections_around,
                   push_deferrer=commit_deferrer(parsed.transactional))
    options.update(overrides)
    labels = {**parsed.labels, **{name: name for name in overrides}, **(sources or {})}
    if options["redis_url"] == PROJECT_REDIS_URL:
        options["redis_url"] = project_redis_url(start=start_project_redis)
    try:
        return parsed, Config(**options)
    except ConfigurationError as exc:
        raise config_error(exc, labels) from None


def build_config(*, start_project_redis: bool = True, sources: Mapping | None = None,
                 **overrides) -> Config:
    """The core Config from settings (see `load`)."""
    return load(start_project_redis=start_project_redis, sources=sources, **overrides)[1]


def project_redis_url(*, start: bool) -> str:
    """The unix socket URL of the project Redis, started if `start`."""
    from .core.project_redis import ensure_server, project_folder, socket_url
    folder = project_folder(project_dir())
    try:
        return ensure_server(folder) if start else socket_url(folder)
    except ConfigurationError as exc:
        raise SettingError(f"WURK['REDIS_URL'] = 'embedded': {exc}", "REDIS_URL") from None


def process_options(wurk: Mapping | None = None, **flags) -> ProcessOptions:
    """PROCESSES, MAX_MEMORY_MB and LOG_FORMAT, as ProcessOptions; a flag given (not
    None: `processes=`, `max_memory_mb=`, `log_format=`) wins over its setting, which
    wins over the environment (WURK_COUNT, then SIDEKIQ_COUNT; WURK_MAXMEM_MB, then
    SIDEKIQ_MAXMEM_MB)."""
    wurk = wurk_settings() if wurk is None else wurk
    values: dict[str, Any] = {}
    labels: dict[str | None, str] = {}
    for key, field in PROCESS_KEYS.items():
        if flags.get(field) is not None:
            values[field], labels[field] = flags[field], "--" + field.replace("_", "-")
        elif key in wurk:
            values[field], labels[field] = wurk[key], f"WURK['{key}']"
    try:
        with_environment(values, labels)  # WURK_COUNT, SIDEKIQ_MAXMEM_MB, ...
        return ProcessOptions(**values)
    except ConfigurationError as exc:
        label = str(labels.get(exc.field, exc.field))  # the field is always set
        setting = next((k for k, f in PROCESS_KEYS.items() if f == exc.field), None)
        raise SettingError(str(exc.renamed(label)),
                           setting if label.startswith("WURK[") else None,
                           field=exc.field) from None


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
    switches to serving it from the host's STATIC_URL instead.
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


# --- the Prometheus endpoint (WURK["METRICS"]) ------------------------------------------

METRICS_KEYS = {"TOKEN", "ALLOW_IPS"}
MIN_TOKEN_CHARS = 16


@dataclass(frozen=True)
class MetricsEndpoint:
    """Who may scrape the endpoint: a bearer token, client networks, or both (both must
    pass). Neither: the endpoint is off and answers 404."""

    token: str | None = None
    allow_ips: tuple = ()

    @property
    def enabled(self) -> bool:
        return self.token is not None or bool(self.allow_ips)


def metrics_endpoint(wurk: Mapping | None = None) -> MetricsEndpoint:
    """Read WURK["METRICS"]: {"TOKEN": "...", "ALLOW_IPS": ["10.0.0.0/8", "::1"]}."""
    import ipaddress
    wurk = wurk_settings() if wurk is None else wurk
    options = wurk.get("METRICS") or {}
    if not isinstance(options, Mapping) or set(options) - METRICS_KEYS:
        raise SettingError(f"WURK['METRICS'] must be a dict with 'TOKEN' and/or 'ALLOW_IPS', "
                           f"got {options!r:.200}", "METRICS")
    token = options.get("TOKEN")
    if token is not None and (not isinstance(token, str) or len(token) < MIN_TOKEN_CHARS):
        raise SettingError(f"WURK['METRICS']['TOKEN'] must be a string of at least "
                           f"{MIN_TOKEN_CHARS} characters (a random secret)", "METRICS")
    networks = options.get("ALLOW_IPS") or ()
    if isinstance(networks, str) or not isinstance(networks, (list, tuple)):
        raise SettingError("WURK['METRICS']['ALLOW_IPS'] must be a list of addresses or "
                           "networks, e.g. ['10.0.0.0/8', '127.0.0.1']", "METRICS")
    try:
        allowed = tuple(ipaddress.ip_network(str(net), strict=False) for net in networks)
    except ValueError as exc:
        raise SettingError(f"WURK['METRICS']['ALLOW_IPS']: {exc}", "METRICS") from None
    return MetricsEndpoint(token=token, allow_ips=allowed)


# --- the web app's health probes (WURK["PROBES"], wurk_django/probes.py) ----------------

PROBE_KEYS = {"LIVENESS_PATH", "READINESS_PATH", "TIMEOUT"}
DEFAULT_PROBE_TIMEOUT_S = 1.0  # Kubernetes' own default probe timeout
MAX_PROBE_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class ProbeSettings:
    """The paths ProbeMiddleware answers (None: that probe is off) and how long the
    readiness probe waits for Redis."""

    liveness_path: str | None = None
    readiness_path: str | None = None
    timeout_s: float = DEFAULT_PROBE_TIMEOUT_S

    @property
    def enabled(self) -> bool:
        return self.liveness_path is not None or self.readiness_path is not None


def raw_wurk_setting():
    """`settings.WURK` as it is, unparsed: the probes re-read theirs only when it changes."""
    return getattr(settings, "WURK", None)


def probe_settings(wurk: Mapping | None = None) -> ProbeSettings:
    """Read WURK["PROBES"]: {"LIVENESS_PATH": "/-/live", "READINESS_PATH": "/-/ready",
    "TIMEOUT": 1.0}; off (no paths) by default."""
    wurk = wurk_settings() if wurk is None else wurk
    options = wurk.get("PROBES") or {}
    if not isinstance(options, Mapping) or set(options) - PROBE_KEYS:
        raise SettingError(f"WURK['PROBES'] must be a dict with LIVENESS_PATH, READINESS_PATH "
                           f"and/or TIMEOUT, got {options!r:.200}", "PROBES")
    paths = {}
    for key in ("LIVENESS_PATH", "READINESS_PATH"):
        path = options.get(key)
        if path is not None and (not isinstance(path, str) or not path.startswith("/")):
            raise SettingError(f"WURK['PROBES']['{key}'] must be a path starting with '/', "
                               f"such as '/-/ready', got {path!r}", "PROBES")
        paths[key] = path
    if paths["LIVENESS_PATH"] is not None and paths["LIVENESS_PATH"] == paths["READINESS_PATH"]:
        raise SettingError("WURK['PROBES']: LIVENESS_PATH and READINESS_PATH must differ",
                           "PROBES")
    timeout = options.get("TIMEOUT", DEFAULT_PROBE_TIMEOUT_S)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) \
            or not 0 < timeout <= MAX_PROBE_TIMEOUT_S:
        raise SettingError(f"WURK['PROBES']['TIMEOUT'] must be a number of seconds above 0 and "
                           f"at most {MAX_PROBE_TIMEOUT_S:g}, got {timeout!r}", "PROBES")
    return ProbeSettings(paths["LIVENESS_PATH"], paths["READINESS_PATH"], float(timeout))


def redis_target() -> tuple[str, dict]:
    """The Redis URL and connection options of the settings, without building a whole
    Config (the readiness probe's, per request); the project Redis is never started."""
    from .core import validation
    wurk = wurk_settings()
    url, options, _ = redis_settings(wurk)
    options = {**options, **(wurk.get("REDIS_OPTIONS") or {})}
    if url == PROJECT_REDIS_URL:
        url = project_redis_url(start=False)
    return validation.redis_url(url), validation.redis_options(url, options)
