"""`BatchStatus`: a batch's counts, times and flags as one HGETALL read them, the live
sets behind them (failing, dead, children) on demand, `data()` for the polling endpoint,
and `delete()`."""

import json
import time

from . import keys
from .config import Config, get_default_config
from .errors import BatchError
from .redis import connection_for

DEFAULT_CALLBACK_QUEUE = "default"
JOIN_POLL_S = 0.5


def decode(value) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _int(value) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def _time(value) -> float | None:
    try:
        return float(value) if value not in (None, "") else None
    except (TypeError, ValueError):
        return None


def parse_tags(text) -> list[str]:
    """A batch's `tags` field (a JSON array); [] when it is not one."""
    try:
        tags = json.loads(text) if text else []
    except ValueError:
        return []
    return [str(tag) for tag in tags] if isinstance(tags, list) else []


def parse_callbacks(text) -> list[list]:
    """The `callbacks` field: `[event, target, options]` entries; [] when unreadable."""
    try:
        entries = json.loads(text) if text else []
    except ValueError:
        return []
    if not isinstance(entries, list):
        return []
    return [entry for entry in entries if isinstance(entry, list) and len(entry) == 3]


def part_keys(bid: str) -> list[str]:
    return [keys.batch_part(bid, part) for part in keys.BATCH_PARTS]


class BatchStatus:
    """A batch as it stands: read once at creation (`reload()` reads again)."""

    def __init__(self, bid: str, config: Config | None = None) -> None:
        if not isinstance(bid, str) or not bid.strip():
            raise BatchError(f"a batch status needs a bid, got {bid!r}")
        self.bid = bid
        self.config = config or get_default_config()
        self.connection = connection_for(self.config)
        self.reload()

    def __repr__(self) -> str:
        return f"<BatchStatus {self.bid} {self.total - self.pending}/{self.total} done>"

    def reload(self) -> "BatchStatus":
        connection = self.connection
        raw = connection.read(connection.client.hgetall, keys.batch(self.bid))
        self.fields = {decode(name): decode(value) for name, value in raw.items()}
        return self

    def _read(self, command: str, part: str):
        connection = self.connection
        return connection.read(getattr(connection.client, command),
                               keys.batch_part(self.bid, part))

    # --- the hash ------------------------------------------------------------------

    @property
    def exists(self) -> bool:
        return bool(self.fields)

    total = property(lambda self: _int(self.fields.get("total")))
    pending = property(lambda self: _int(self.fields.get("pending")))
    failures = property(lambda self: _int(self.fields.get("failures")))
    created_at = property(lambda self: _time(self.fields.get("created_at")))
    complete_at = property(lambda self: _time(self.fields.get("complete_at")))
    success_at = property(lambda self: _time(self.fields.get("success_at")))
    death_at = property(lambda self: _time(self.fields.get("death_at")))
    description = property(lambda self: self.fields.get("description") or None)
    callback_class = property(lambda self: self.fields.get("callback_class") or None)
    parent_bid = property(lambda self: self.fields.get("parent_bid") or None)
    success = property(lambda self: self.fields.get("success") == "1")
    dead = property(lambda self: self.fields.get("death") == "1")
    invalidated = property(lambda self: self.fields.get("invalidated") == "1")
    tags = property(lambda self: parse_tags(self.fields.get("tags")))
    callbacks = property(lambda self: parse_callbacks(self.fields.get("callbacks")))

    @property
    def callback_queue(self) -> str:
        return self.fields.get("callback_queue") or DEFAULT_CALLBACK_QUEUE

    @property
    def linger(self) -> int | None:
        value = self.fields.get("linger")
        return _int(value) if value else None

    @property
    def complete(self) -> bool:
        """Every job has run at least once and every child batch is complete (fired, or
        due to fire: nothing live is left)."""
        if self.fields.get("complete") == "1":
            return True
        if not self.exists:
            return False
        return self._read("scard", "jids") == 0 and self._read("scard", "pkids") == 0

    @property
    def failure_info(self) -> list:
        return []  # failure details are in the retry and dead sets, found by jid

    # --- the live sets ---------------------------------------------------------------

    @property
    def failed_jids(self) -> list[str]:
        """Jids failing now (each will be retried)."""
        return sorted(decode(jid) for jid in self._read("smembers", "failed"))

    @property
    def dead_jids(self) -> list[str]:
        return sorted(decode(jid) for jid in self._read("smembers", "died"))

    @property
    def child_bids(self) -> list[str]:
        return sorted(decode(bid) for bid in self._read("smembers", "kids"))

    @property
    def child_count(self) -> int:
        return int(self._read("scard", "kids"))

    def include(self, jid: str) -> bool:
        """True while `jid` is a job of this batch that has not succeeded or died."""
        connection = self.connection
        return bool(connection.read(connection.client.sismember,
                                    keys.batch_part(self.bid, "jids"), jid))

    # --- uses --------------------------------------------------------------------

    def data(self) -> dict:
        """What the polling endpoint answers: plain JSON values."""
        return {
            "bid": self.bid, "total": self.total, "pending": self.pending,
            "failures": self.failures, "complete": self.complete, "success": self.success,
            "dead": self.dead, "invalidated": self.invalidated,
            "created_at": self.created_at, "complete_at": self.complete_at,
            "success_at": self.success_at, "death_at": self.death_at,
            "description": self.description, "parent_bid": self.parent_bid,
            "tags": self.tags, "child_count": self.child_count, "fail_info": [],
        }

    def join(self, timeout_s: float | None = None, interval_s: float = JOIN_POLL_S) -> bool:
        """Wait until the batch is complete (scripts and tests); False at the timeout."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while not self.reload().complete:
            if deadline is not None and time.monotonic() >= deadline:
                return False
            time.sleep(interval_s)
        return True

    def delete(self) -> bool:
        """Remove the batch and its index entries. Jobs still queued or running stay and
        are simply no longer counted; delete a batch whose jobs are done."""
        connection = self.connection
        existed = self.exists
        pipe = connection.pipeline(transaction=True)
        pipe.unlink(keys.batch(self.bid), *part_keys(self.bid))
        pipe.zrem(keys.BATCHES, self.bid)
        pipe.zrem(keys.DEAD_BATCHES, self.bid)
        for tag in self.tags:
            pipe.srem(keys.batch_tag(tag), self.bid)
        connection.write(pipe.execute)
        self.fields = {}
        return existed
