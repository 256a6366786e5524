"""Wurk: Sidekiq-compatible background jobs for Django.

The public names are loaded lazily, so importing this package reads no settings and
touches neither Django models nor Redis.
"""

from typing import TYPE_CHECKING

from .core.version import VERSION as __version__

_EXPORTS = ("Batch", "BatchStatus", "Client", "Config", "configure_embed", "ConfigurationError",
            "DEFAULT", "DISCARD", "EmptyQueueError", "Job", "JobArgumentError", "KILL", "Limiter",
            "OverLimit",
            "RedisUnavailableError", "Shutdown",
            "TestModeAlreadySetError", "UnknownTaskError", "Workflow", "WurkError", "log_context",
            "strict_args", "testing", "wurk_task")

if TYPE_CHECKING:  # what __getattr__ loads, as type checkers should see it
    from .core import DEFAULT as DEFAULT
    from .core import DISCARD as DISCARD
    from .core import KILL as KILL
    from .core import Batch as Batch
    from .core import BatchStatus as BatchStatus
    from .core import Client as Client
    from .core import Config as Config
    from .core import ConfigurationError as ConfigurationError
    from .core import EmptyQueueError as EmptyQueueError
    from .core import Job as Job
    from .core import JobArgumentError as JobArgumentError
    from .core import Limiter as Limiter
    from .core import OverLimit as OverLimit
    from .core import RedisUnavailableError as RedisUnavailableError
    from .core import Shutdown as Shutdown
    from .core import TestModeAlreadySetError as TestModeAlreadySetError
    from .core import UnknownTaskError as UnknownTaskError
    from .core import Workflow as Workflow
    from .core import WurkError as WurkError
    from .core import configure_embed as configure_embed
    from .core import log_context as log_context
    from .core import strict_args as strict_args
    from .core import testing as testing
    from .core import wurk_task as wurk_task


def __getattr__(name: str) -> object:
    if name in _EXPORTS:
        from . import core
        return getattr(core, name)
    raise AttributeError(f"module 'wurk_django' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(list(globals()) + list(_EXPORTS))


__all__ = list(_EXPORTS) + ["__version__"]
