"""System checks for `manage.py check`: the WURK setting, cron loops and Redis.

The settings are validated once, by building the Config; each check here reports what
that raised (named by the WURK key), picking the id by the key at fault.
"""

from django.core.checks import Error, Warning, register

from . import conf
from .core.config import ROUTABLE_QUEUE
from .core.errors import ConfigurationError, WurkError

REDIS_CHECK_TIMEOUT_S = 1.0
HINT_DOCS = "See the configuration reference in Wurk's README."
QUEUES_HINT = 'Write "name" or "name,weight" with a whole-number weight, e.g. "critical,3".'
CRON_HINT = ('Five fields, e.g. "*/5 * * * *" (a sixth field, last, gives seconds), and '
             '"task" naming a task by import path or wire name.')
ENCRYPTION_HINT = ('Set WURK["ENCRYPTION"] = {"ACTIVE_VERSION": 1, "KEY_RESOLVER": '
                   '"myproject.crypto.key_for"}, a function returning the 32-byte key of a '
                   'version, and install "wurk-django[crypto]".')
# The check id for an invalid key; every other key is wurk.E004.
CHECK_IDS: dict[str | None, tuple[str, str]] = {
    "QUEUES": ("wurk.E003", QUEUES_HINT), "CRON": ("wurk.E005", CRON_HINT),
    "CRON_TZ": ("wurk.E005", CRON_HINT),
    "EMBEDDED": ("wurk.E007", 'Use True, or {"CONCURRENCY": 2}.'),
    "ENCRYPTION": ("wurk.E008", ENCRYPTION_HINT)}


@register("wurk")
def check_settings(app_configs=None, **kwargs):
    try:
        wurk = conf.wurk_settings()
    except ConfigurationError as exc:
        return [Error(str(exc), hint="Set WURK = {...} to a dict.", id="wurk.E001")]
    problems = _check_unknown_keys(wurk)
    try:
        parsed, config = conf.load(start_project_redis=False)
    except ConfigurationError as exc:
        return problems + [_setting_error(exc)]
    except (WurkError, TypeError, ValueError) as exc:  # a check never ends in a traceback
        return problems + [Error(f"Invalid WURK setting: {exc}", hint=HINT_DOCS,
                                 id="wurk.E004")]
    problems += _check_embedded(parsed, config) + _check_loops(config)
    problems += _check_encryption(config)
    if any(p.is_serious() for p in problems):
        return problems
    return (problems + _check_routable(config) + _check_probes()
            + _check_redis(parsed, config))


def _setting_error(exc: ConfigurationError, key: str | None = None) -> Error:
    check_id, hint = CHECK_IDS.get(key or getattr(exc, "key", None), ("wurk.E004", HINT_DOCS))
    text = str(exc)
    return Error(f"{text[:1].upper()}{text[1:]}.", hint=hint, id=check_id)


def _check_embedded(parsed, config) -> list:
    if not parsed.embedded:
        return []
    labels = {field: f"WURK['EMBEDDED']['{key}']" for key, field in conf.EMBEDDED_KEYS.items()}
    try:
        config.replace(**parsed.embedded)
    except ConfigurationError as exc:
        return [_setting_error(conf.config_error(exc, labels), "EMBEDDED")]
    return []


def _check_loops(config) -> list:
    """Loops that name no known task, and bad `@wurk_task(cron=...)` declarations."""
    from .core.cron import entry_problems
    return [_setting_error(conf.config_error(exc, {"cron_entries": "WURK['CRON']"}), "CRON")
            for exc in entry_problems(config)]


def _check_encryption(config) -> list:
    """wurk.E008: a task (or the default options) asks for encrypt=True but no key can be
    had, so every push of it would fail; or the key settings themselves are broken."""
    from .core import encryption
    from .core.registry import REGISTRY
    wanting = [name for name in REGISTRY.names()
               if (REGISTRY.get(name).task_options or {}).get("encrypt")]
    if config.default_job_options.get("encrypt"):
        wanting.insert(0, "WURK['DEFAULT_JOB_OPTIONS']")
    settings = encryption.settings_for(config)
    if settings is None:
        if not wanting:
            return []
        return [Error(f"encrypt=True is set on {', '.join(wanting[:5])}"
                      f"{' and others' if len(wanting) > 5 else ''} but no encryption key is "
                      f"configured: every push of these tasks would fail.",
                      hint=ENCRYPTION_HINT, id="wurk.E008")]
    try:
        encryption.resolver_of(settings)
        encryption._aesgcm()
    except ConfigurationError as exc:
        return [Error(f"WURK['ENCRYPTION']: {exc}.", hint=ENCRYPTION_HINT, id="wurk.E008")]
    return []


def _check_unknown_keys(wurk) -> list:
    problems = []
    for key, close in conf.unknown_keys(wurk):
        hint = (f"Did you mean {close!r}?" if close
                else f"Known keys: {', '.join(sorted(conf.KNOWN_KEYS))}.")
        problems.append(Error(f"Unknown key {key!r} in the WURK setting.", hint=hint,
                              id="wurk.E002"))
    return problems


def _check_routable(config) -> list:
    return [Warning(f"Queue name {name!r} has characters the Sidekiq web UI cannot route.",
                    hint=f"Use only letters, digits and {ROUTABLE_QUEUE.pattern[4:-3]}.",
                    id="wurk.W002") for name in config.unroutable_queues()]


PROBE_MIDDLEWARE = "wurk_django.probes.ProbeMiddleware"


def _check_probes() -> list:
    """PROBES paths with no middleware to answer them would answer 404, or a login page."""
    from django.conf import settings
    if not conf.probe_settings().enabled or PROBE_MIDDLEWARE in settings.MIDDLEWARE:
        return []
    return [Warning(f"WURK['PROBES'] names probe paths, but {PROBE_MIDDLEWARE} is not in "
                    f"MIDDLEWARE, so nothing answers them.",
                    hint=f"Put {PROBE_MIDDLEWARE!r} first in MIDDLEWARE.", id="wurk.W003")]


def _check_redis(parsed, config) -> list:
    from .core.redis import REDIS_ERRORS, RedisConnection, mask_url
    if parsed.project_redis:
        return []  # started on demand by the worker or web process
    connection = RedisConnection(config.redis_url, pool_size=1,
                                 socket_timeout_s=REDIS_CHECK_TIMEOUT_S,
                                 **dict(config.redis_options))
    try:
        version = connection.server_version()
    except REDIS_ERRORS as exc:
        return [Warning(f"Redis at {mask_url(config.redis_url)} is unreachable: {exc}",
                        hint="Start Redis, or set WURK['REDIS_URL'] (or the WURK_REDIS_URL "
                             "environment variable).", id="wurk.W001")]
    finally:
        connection.close()
    if version < (6, 2):
        return [Error(f"Redis at {mask_url(config.redis_url)} is version "
                      f"{'.'.join(map(str, version))}; Wurk needs 6.2 or newer.",
                      hint="Upgrade Redis (7.x recommended) or use Valkey.", id="wurk.E006")]
    return []


# --- django.tasks backend (wurk_django.tasks_backend) --------------------------------

@register("wurk")
def check_tasks_backend(app_configs=None, **kwargs):
    """TASKS entries that use WurkBackend: their OPTIONS and QUEUES (wurk.E101, E102)."""
    from importlib.util import find_spec
    if find_spec("django.tasks") is None and find_spec("django_tasks") is None:
        return []  # no tasks framework installed, so TASKS is not in use
    from .tasks_backend.checks import check_task_backends
    return check_task_backends()


# --- dashboard (wurk_django.dashboard) --------------------------------------------

@register("wurk_dashboard", "urls")
def check_dashboard(app_configs=None, **kwargs):
    """DASHBOARD settings, the mount resolving to the dashboard, the bundle (wurk.E2xx)."""
    from .dashboard.checks import dashboard_problems
    return dashboard_problems()
