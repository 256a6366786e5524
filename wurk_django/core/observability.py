"""The metrics and tracing fields of a `Config`: their checks, and the middleware they
install. Nothing is installed for a field left at its default, so a worker without them
pays nothing per job or per push."""

import importlib

from . import validation as check
from .errors import ConfigurationError

MAX_PORT = 65_535


def configure(config) -> None:
    """Check every metrics and tracing field of `config`, then install what they ask for.

    Called by `Config.__post_init__`; installing is idempotent (each chain holds a
    middleware class once), so a `replace()` copy installs nothing twice.
    """
    _check(config)
    if config.opentelemetry:
        from . import tracing
        tracing.install(config)
    if config.metrics_port is not None:
        from . import prometheus
        prometheus.install(config)
    if config.statsd_job_metrics:
        from . import statsd
        statsd.install(config)


def _check(config) -> None:
    set_ = object.__setattr__
    check.whole("metrics_port", config.metrics_port, 1, optional=True)
    if config.metrics_port is not None and config.metrics_port > MAX_PORT:
        raise ConfigurationError(f"metrics_port must be a port number from 1 to {MAX_PORT}, "
                                 f"got {config.metrics_port!r}", field="metrics_port")
    if not isinstance(config.metrics_address, str) or not config.metrics_address:
        raise ConfigurationError(f"metrics_address must be an address to listen on, such as "
                                 f"'0.0.0.0' or '127.0.0.1', got {config.metrics_address!r}",
                                 field="metrics_address")
    check.whole("process_slot", config.process_slot, 0)
    check.number("retain_history_s", config.retain_history_s, positive=True, optional=True)
    for name in ("opentelemetry", "statsd_job_metrics"):
        check.one_of(name, getattr(config, name), (True, False), "True or False")
    set_(config, "statsd", callable_setting("statsd", config.statsd))
    set_(config, "statsd_options", callable_setting("statsd_options", config.statsd_options))
    set_(config, "history_collector", callable_setting("history_collector",
                                                       config.history_collector))
    if config.history_collector is not None and config.statsd is None:
        raise ConfigurationError("history_collector needs a statsd client factory (statsd)",
                                 field="history_collector")
    if config.statsd_job_metrics and config.statsd is None:
        raise ConfigurationError("statsd_job_metrics needs a statsd client factory (statsd)",
                                 field="statsd_job_metrics")


def callable_setting(field: str, value):
    """None, a callable, or the import path of one ("myproject.metrics.statsd_client")."""
    if value is None or callable(value):
        return value
    if not isinstance(value, str) or "." not in value.strip(". "):
        raise ConfigurationError(f"{field} must be a function or its import path "
                                 f"('package.module.name'), got {value!r:.100}", field=field)
    module_name, _, attribute = value.rpartition(".")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # noqa: BLE001 - any import error, told plainly
        raise ConfigurationError(f"{field}: importing {module_name!r} for {value!r} failed: "
                                 f"{type(exc).__name__}: {exc}", field=field) from None
    found = getattr(module, attribute, None)
    if found is None:
        raise ConfigurationError(f"{field}: module {module_name!r} has no {attribute!r}",
                                 field=field)
    if not callable(found):
        raise ConfigurationError(f"{field}: {value!r} is not callable", field=field)
    return found
