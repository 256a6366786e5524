"""System checks for `manage.py check`: the WURK setting, cron entries and Redis."""

from django.core.checks import Error, Warning, register

from . import conf
from .core.config import ROUTABLE_QUEUE, parse_queue
from .core.errors import ConfigurationError, WurkError

REDIS_CHECK_TIMEOUT_S = 1.0
HINT_DOCS = "See the configuration reference in Wurk's README."


@register("wurk")
def check_settings(app_configs=None, **kwargs):
    try:
        wurk = conf.wurk_settings()
    except ConfigurationError as exc:
        return [Error(str(exc), hint="Set WURK = {...} to a dict.", id="wurk.E001")]
    problems = _check_unknown_keys(wurk) + _check_queues(wurk) + _check_cron(wurk)
    if any(p.is_serious() for p in problems):
        return problems  # a broken setting makes building the Config pointless
    try:
        config = conf.build_config(resolve_embedded=False)
    except (WurkError, TypeError, ValueError) as exc:
        return problems + [Error(f"Invalid WURK setting: {exc}", hint=HINT_DOCS,
                                 id="wurk.E004")]
    return problems + _check_embedded(wurk) + _check_routable(config) + _check_redis(config)


def _check_embedded(wurk) -> list:
    from .embedded import embedded_overrides
    try:
        embedded_overrides(wurk)
    except (WurkError, TypeError, ValueError) as exc:
        return [Error(f"WURK['EMBEDDED']: {exc}", hint='Use True, or {"CONCURRENCY": 2}.',
                      id="wurk.E007")]
    return []


def _check_unknown_keys(wurk) -> list:
    problems = []
    for key, close in conf.unknown_keys(wurk):
        hint = f"Did you mean {close!r}?" if close else f"Known keys: {', '.join(sorted(conf.KNOWN_KEYS))}."
        problems.append(Error(f"Unknown key {key!r} in the WURK setting.", hint=hint,
                              id="wurk.E002"))
    return problems


def _check_queues(wurk) -> list:
    queues = wurk.get("QUEUES", ["default"])
    if isinstance(queues, str) or not isinstance(queues, (list, tuple)) or not queues:
        return [Error(f"WURK['QUEUES'] must be a non-empty list, got {queues!r}.",
                      hint='For example ["critical,3", "default,2", "low"].', id="wurk.E003")]
    problems = []
    for entry in queues:
        try:
            parse_queue(entry)
        except ConfigurationError as exc:
            problems.append(Error(f"WURK['QUEUES']: {exc}.",
                                  hint='Write "name" or "name,weight" with a whole-number '
                                       'weight, e.g. "critical,3".', id="wurk.E003"))
    return problems


def _check_cron(wurk) -> list:
    from .core.cron import entry_from_setting
    entries = wurk.get("CRON", [])
    if not isinstance(entries, (list, tuple)):
        return [Error("WURK['CRON'] must be a list of entries.", hint=HINT_DOCS, id="wurk.E005")]
    problems = []
    hint = ('Five fields, e.g. "*/5 * * * *" (a sixth field, last, gives seconds), and '
            '"task" naming a task by import path or wire name.')
    for index, entry in enumerate(entries):
        where = f"WURK['CRON'][{index}]"
        if not isinstance(entry, dict):
            problems.append(Error(f"{where} must be a dict with 'cron' and 'task', got "
                                  f"{entry!r:.100}.", hint=hint, id="wurk.E005"))
            continue
        try:
            entry_from_setting(entry, f"{where} ({entry.get('task')})", wurk.get("CRON_TZ", ""))
        except ConfigurationError as exc:
            problems.append(Error(f"{exc}.", hint=hint, id="wurk.E005"))
    return problems


def _check_routable(config) -> list:
    return [Warning(f"Queue name {name!r} has characters the Sidekiq web UI cannot route.",
                    hint=f"Use only letters, digits and {ROUTABLE_QUEUE.pattern[4:-3]}.",
                    id="wurk.W002") for name in config.unroutable_queues()]


def _check_redis(config) -> list:
    from .core.redis import REDIS_ERRORS, RedisConnection, mask_url
    if config.redis_url == conf.EMBEDDED_URL:
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
