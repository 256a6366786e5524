"""Read-only views of stored jobs: a JobRecord wraps one payload exactly as Redis holds it."""

import time
from datetime import datetime

from ..encryption import is_marked
from ..payload import decode_backtrace, dumps, loads, to_datetime, to_epoch_seconds
from .base import as_bytes

# The class the django.tasks backend writes; the real task sits in `wrapped`.
TASK_WRAPPER = "wurk_django.tasks_backend.TaskWrapper"
ENCRYPTED_PLACEHOLDER = "[encrypted data]"


def parse_job(raw: bytes) -> dict | None:
    """The job hash, or None when the payload is not a JSON object (kept raw, never dropped)."""
    try:
        item = loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None
    return item if isinstance(item, dict) else None


def seconds_since(timestamp) -> float:
    """Seconds from a job timestamp in either form (int ms or float seconds) to now; 0.0
    if absent."""
    seconds = to_epoch_seconds(timestamp)
    return 0.0 if seconds is None else time.time() - seconds


def enqueued_latency(raw) -> float:
    """Queue latency from the oldest payload: only `enqueued_at` counts, as in Sidekiq."""
    if raw is None:
        return 0.0
    item = parse_job(as_bytes(raw))
    return 0.0 if item is None else seconds_since(item.get("enqueued_at"))


class JobRecord:
    """One job payload: the exact stored bytes (`raw`) and, when it parses, the job hash.

    Removal always uses `raw`, never a re-serialisation, because LREM and ZREM match
    byte for byte.
    """

    def __init__(self, raw, queue: str | None = None):
        self.raw: bytes = as_bytes(raw)
        self.item: dict | None = parse_job(self.raw)
        self.queue: str | None = queue if queue is not None else self.get("queue")

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.display_class} jid={self.jid} queue={self.queue}>"

    def get(self, key: str, default=None):
        return default if self.item is None else self.item.get(key, default)

    @property
    def parsed(self) -> bool:
        return self.item is not None

    @property
    def value(self) -> str:
        """The stored payload as text, for display and search."""
        return self.raw.decode("utf-8", "replace")

    @property
    def klass(self) -> str | None:
        return self.get("class")

    @property
    def display_class(self) -> str | None:
        return self.get("display_class") or self.get("wrapped") or self.klass

    @property
    def raw_args(self) -> list:
        args = self.get("args")
        return args if isinstance(args, list) else []

    @property
    def args(self) -> list:
        """Arguments as a person wants to read them: unwrapped and redacted.

        An unparseable payload shows itself as its only argument, as Sidekiq's UI does.
        """
        if self.item is None:
            return [self.value]
        args = list(self.raw_args)
        if self.encrypted:
            args[-1] = ENCRYPTED_PLACEHOLDER
        elif self.klass == TASK_WRAPPER:
            args = _unwrap_task_args(args)
        return args

    @property
    def encrypted(self) -> bool:
        """Its last argument is sealed: the job says so, or the argument is an envelope
        (an `encrypt` flag lost on the way must not unveil it)."""
        args = self.raw_args
        return bool(args) and (bool(self.get("encrypt")) or is_marked(args[-1]))

    @property
    def shown_value(self) -> str:
        """The payload as text for a person to read: `value`, with an encrypted argument
        shown as the placeholder (never its ciphertext). Not for LREM/ZREM: use `raw`."""
        if not self.encrypted or self.item is None:
            return self.value
        item = dict(self.item)
        item["args"] = [*self.raw_args[:-1], ENCRYPTED_PLACEHOLDER]
        return dumps(item).decode("utf-8", "replace")

    @property
    def jid(self) -> str | None:
        return self.get("jid")

    @property
    def bid(self) -> str | None:
        return self.get("bid")

    @property
    def created_at(self) -> datetime | None:
        # Very old payloads have no created_at; enqueued_at is the best stand-in.
        return to_datetime(self.get("created_at", self.get("enqueued_at")))

    @property
    def enqueued_at(self) -> datetime | None:
        return to_datetime(self.get("enqueued_at"))

    @property
    def failed_at(self) -> datetime | None:
        return to_datetime(self.get("failed_at"))

    @property
    def retried_at(self) -> datetime | None:
        return to_datetime(self.get("retried_at"))

    @property
    def error_message(self) -> str | None:
        return self.get("error_message")

    @property
    def error_class(self) -> str | None:
        return self.get("error_class")

    @property
    def has_error(self) -> bool:
        return bool(self.get("error_class"))

    @property
    def retry_count(self) -> int | None:
        count = self.get("retry_count")
        return count if isinstance(count, int) and not isinstance(count, bool) else None

    @property
    def tags(self) -> list:
        tags = self.get("tags")
        return tags if isinstance(tags, list) else []

    @property
    def error_backtrace(self) -> list[str]:
        return decode_backtrace(self.get("error_backtrace"))

    @property
    def latency(self) -> float:
        """Seconds since the job was enqueued (or created, if never enqueued)."""
        return seconds_since(self.get("enqueued_at", self.get("created_at")))


def _unwrap_task_args(args: list) -> list:
    """Show a django.tasks job's own arguments rather than the backend's envelope.

    The envelope is one object holding the positional `args` and the `kwargs`; keyword
    arguments, when any, are shown as a trailing dict.
    """
    if len(args) != 1 or not isinstance(args[0], dict) or "args" not in args[0]:
        return args
    envelope = args[0]
    shown = list(envelope["args"]) if isinstance(envelope["args"], list) else [envelope["args"]]
    if envelope.get("kwargs"):
        shown.append(envelope["kwargs"])
    return shown
