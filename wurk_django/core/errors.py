"""Wurk's exception types; redis-py errors are rethrown as these at the boundary."""

from typing import Any


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


class RedisFailure(WurkError):
    """Redis did not run a command: the link failed, or Redis refused it.

    The connection layer (core/redis.py) turns every redis-py error into one of these,
    so no other module needs to know redis-py's exception types.
    """


class RedisUnavailableError(RedisFailure, ConnectionError):
    """Redis could not be reached or dropped the connection mid-command."""


class RedisCommandError(RedisFailure):
    """Redis answered a command with an error (out of memory, a busy script, ...)."""

    def __init__(self, message: str = "", *, reply: str = ""):
        super().__init__(message)
        self.reply = reply or message  # Redis's own error text, e.g. "READONLY ..."


class WrongTypeError(RedisCommandError, TypeError):
    """A key holds another type of value than Wurk keeps there (Redis answered WRONGTYPE).

    Such keys come from other tools or hand-made commands (`SET queue:w x`); a reader
    that knows the key names it, so one bad key can be shown as one bad row.
    """

    def __init__(self, key: str | None = None, found: str | None = None,
                 expected: str | None = None, *, reply: str = ""):
        self.key, self.found, self.expected = key, found, expected
        if key is None:
            message = "A Redis key holds another type of value than Wurk expects"
            message += f" ({reply})" if reply else ""
        else:
            message = f"Redis key {key!r} holds a {found or 'value of another type'}"
            message += f", not a {expected}" if expected else ""
        super().__init__(message, reply=reply)


class ScriptMissingError(RedisCommandError):
    """Redis does not know a script's SHA (restarted or SCRIPT FLUSH): load it again."""


class BufferOverflow(RedisUnavailableError):
    """Reliable push's buffer is full under OVERFLOW "raise": these pushes were not kept.
    `payloads` holds every one that was not delivered, as bytes."""

    def __init__(self, message: str = "", *, payloads: list | None = None):
        super().__init__(message)
        self.payloads = payloads or []


class EncryptionError(WurkError):
    """A job's encrypted argument cannot be encrypted or decrypted: no key for its
    version, a key of the wrong size, a tampered ciphertext, or a malformed envelope."""


class TestModeAlreadySetError(WurkError):
    """A testing-mode block was opened inside another one."""

    __test__ = False  # keeps pytest from collecting it as a test class


class EmptyQueueError(WurkError):
    """A fake-mode helper was asked for a job when none is queued."""


class BatchError(WurkError, ValueError):
    """A batch was used in a way that cannot work (an option set too late, a bad event)."""


class BatchNotFoundError(BatchError, LookupError):
    """No batch with that bid exists: never created, expired, or deleted."""


class CallbackTargetError(BatchError):
    """A batch callback target cannot be found or called (import, class or method)."""


class OverLimit(WurkError):
    """A rate limiter refused a call: its limit stayed reached for the wait allowed.

    `limiter` is the limiter that refused. Raised inside a job, the worker reschedules the
    job (same jid) with a backoff instead of failing it, and sets `job` to its payload.
    """

    def __init__(self, message: str = "", *, limiter: Any = None):
        super().__init__(message)
        self.limiter = limiter
        self.job: dict | None = None


class InvalidJobError(WurkError):
    """A fetched payload is not valid JSON or lacks a class; it goes to the dead set."""


class Shutdown(BaseException):
    """Raised inside a job to stop it because the process is shutting down.

    A BaseException, as Sidekiq's, so a task's broad `except Exception` cannot swallow it.
    """
