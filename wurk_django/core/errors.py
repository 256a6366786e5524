"""Wurk's exception types; redis-py errors are rethrown as these at the boundary."""


class WurkError(Exception):
    """Base class of every error Wurk raises on purpose."""


class ConfigurationError(WurkError, ValueError):
    """A setting or command-line option is invalid."""


class JobArgumentError(WurkError, TypeError, ValueError):
    """A job item or its arguments cannot be pushed as given."""


class UnknownTaskError(WurkError, NameError):
    """A payload names a task this process has not registered."""


class DuplicateTaskError(WurkError):
    """Two different tasks tried to register the same wire name."""


class RedisUnavailableError(WurkError, ConnectionError):
    """Redis could not be reached or dropped the connection mid-command."""


class TestModeAlreadySetError(WurkError):
    """A testing-mode block was opened inside another one."""

    __test__ = False  # keeps pytest from collecting it as a test class


class EmptyQueueError(WurkError):
    """A fake-mode helper was asked for a job when none is queued."""


class InvalidJobError(WurkError):
    """A fetched payload is not valid JSON or lacks a class; it goes to the dead set."""


class Shutdown(BaseException):
    """Raised inside a job to stop it because the process is shutting down.

    A BaseException, as Sidekiq's, so a task's broad `except Exception` cannot swallow it.
    """
