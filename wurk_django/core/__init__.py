"""Wurk's engine: a Sidekiq-compatible Redis job system. Never imports Django."""

from .batch import Batch
from .batch_status import BatchStatus
from .client import Client
from .config import Config, get_default_config, set_default_config
from .embedded import configure_embed
from .errors import (
    ConfigurationError,
    EmptyQueueError,
    JobArgumentError,
    OverLimit,
    RedisUnavailableError,
    Shutdown,
    TestModeAlreadySetError,
    UnknownTaskError,
    WurkError,
)
from .joblog import log_context
from .limiter import Limiter
from .task import DEFAULT, DISCARD, KILL, Job, wurk_task
from .testing_modes import testing
from .version import VERSION
from .workflow import Workflow


def strict_args(mode: str | bool = "raise") -> None:
    """Set how non-JSON-native arguments are treated: "raise", "warn" or False."""
    set_default_config(get_default_config().replace(on_complex_arguments=mode))


__version__ = VERSION
__all__ = ["Batch", "BatchStatus", "Client", "Config",
           "configure_embed", "ConfigurationError", "DEFAULT", "DISCARD",
           "EmptyQueueError", "Job", "JobArgumentError", "KILL", "Limiter", "OverLimit",
           "RedisUnavailableError", "Shutdown",
           "TestModeAlreadySetError", "UnknownTaskError", "Workflow", "WurkError",
           "get_default_config",
           "log_context", "set_default_config", "strict_args", "testing", "wurk_task"]
