"""Wurk: Sidekiq-compatible background jobs for Django.

The public names are loaded lazily, so importing this package reads no settings and
touches neither Django models nor Redis.
"""

from .core.version import VERSION as __version__

_EXPORTS = ("Batch", "BatchStatus", "Client", "Config", "configure_embed", "ConfigurationError", "DEFAULT", "DISCARD",
            "EmptyQueueError", "Job", "JobArgumentError", "KILL", "Limiter", "OverLimit",
            "RedisUnavailableError", "Shutdown",
            "TestModeAlreadySetError", "UnknownTaskError", "Workflow", "WurkError", "log_context",
            "strict_args", "testing", "wurk_task")


def __getattr__(name):
    if name in _EXPORTS:
        from . import core
        return getattr(core, name)
    raise AttributeError(f"module 'wurk_django' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_EXPORTS))


__all__ = list(_EXPORTS) + ["__version__"]
