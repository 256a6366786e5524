"""Wurk's exception types; redis-py errors are rethrown as these at the boundary."""


class WurkError(Exception):
    """Base class of every error Wurk raises on purpose."""


class ConfigurationError(WurkError, ValueError):
    """A setting or command-line option is invalid; `field` names the Config field at
    fault, when one is, so the Django layer can name the WURK key instead."""

    def __init__(self, message: str = "", *, field: str | None = None):
        super().__init__(message)
        self.field = field

    def renamed(self, label: str) -> "ConfigurationError":
        """The same error, told with `label` (a setting or a flag) in place of the field."""
        text = str(self)
        field = self.field or ""
        if field and text.startswith(field) and text[len(field):][:1] in (" ", ":", "["):
            text = label + text[len(field):]
        else:
            text = f"{label}: {text}"
        return ConfigurationError(text, field=self.field)


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
