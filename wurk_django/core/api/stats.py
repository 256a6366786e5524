"""Cluster-wide numbers: lifetime counters, set sizes, queue sizes and daily history."""

from datetime import date, datetime, timedelta, timezone

from .. import keys
from .base import ApiObject, text
from .records import enqueued_latency

STAT_KINDS = ("processed", "failed")
HISTORY_MAX_DAYS = 5 * 365  # per-day counters live five years (wire §1)
DEFAULT_QUEUE = "default"


class Stats(ApiObject):
    """A snapshot read in two pipelined round trips when the object is built.

    The first trip fetches the counters, set sizes and the member lists; the second
    the busy count of every process and the length of every queue.
    """

    def __init__(self, config=None):
        super().__init__(config)
        self._load()

    def _load(self) -> None:
        def first(pipe):
            pipe.get(keys.STAT_PROCESSED)
            pipe.get(keys.STAT_FAILED)
            pipe.zcard(keys.SCHEDULE)
            pipe.zcard(keys.RETRY)
            pipe.zcard(keys.DEAD)
            pipe.smembers(keys.PROCESSES)
            pipe.smembers(keys.QUEUES)
            pipe.lindex(keys.queue(DEFAULT_QUEUE), -1)

        (processed, failed, scheduled, retries, dead, processes, queues,
         oldest_default) = self._pipelined(first)
        processes = [text(p) for p in processes]
        queues = [text(q) for q in queues]

        def second(pipe):
            for identity in processes:
                pipe.hget(identity, "busy")
            for name in queues:
                pipe.llen(keys.queue(name))

        replies = self._pipelined(second) if processes or queues else []
        busy, lengths = replies[:len(processes)], replies[len(processes):]
        self.processed = _int(processed)
        self.failed = _int(failed)
        self.scheduled_size = int(scheduled)
        self.retry_size = int(retries)
        self.dead_size = int(dead)
        self.processes_size = len(processes)
        self.workers_size = sum(_int(b) for b in busy)
        sizes = sorted(zip(queues, (int(n) for n in lengths)), key=lambda q: (-q[1], q[0]))
        self.queues: dict[str, int] = dict(sizes)
        self.enqueued = sum(self.queues.values())
        self.default_queue_latency = enqueued_latency(oldest_default)

    @classmethod
    def reset(cls, *kinds: str, config=None) -> None:
        """Set the lifetime counters (`processed`, `failed`, or both by default) to zero."""
        unknown = set(kinds) - set(STAT_KINDS)
        if unknown:
            raise ValueError(f"unknown stats {sorted(unknown)}; expected {STAT_KINDS}")
        api = ApiObject(config)
        api._write(api.redis.mset, {keys.stat(kind): 0 for kind in kinds or STAT_KINDS})


class History(ApiObject):
    """Per-day processed and failed counts, newest day first, read with one MGET each."""

    def __init__(self, days_previous: int, start_date: date | None = None, config=None):
        super().__init__(config)
        if not isinstance(days_previous, int) or not 1 <= days_previous <= HISTORY_MAX_DAYS:
            raise ValueError(f"days_previous must be between 1 and {HISTORY_MAX_DAYS}, "
                             f"got {days_previous!r}")
        if isinstance(start_date, datetime):
            start_date = start_date.astimezone(timezone.utc).date()
        self.days_previous = days_previous
        self.start_date = start_date or datetime.now(timezone.utc).date()
        self._cache: dict[str, dict[str, int]] = {}

    @property
    def dates(self) -> list[str]:
        return [(self.start_date - timedelta(days=n)).strftime("%Y-%m-%d")
                for n in range(self.days_previous)]

    @property
    def processed(self) -> dict[str, int]:
        return self._series("processed")

    @property
    def failed(self) -> dict[str, int]:
        return self._series("failed")

    def _series(self, kind: str) -> dict[str, int]:
        if kind not in self._cache:
            dates = self.dates
            values = self._read(self.redis.mget, [keys.stat(kind, day) for day in dates])
            self._cache[kind] = {day: _int(value) for day, value in zip(dates, values)}
        return self._cache[kind]


def _int(value) -> int:
    """A counter reply; a missing key reads as zero."""
    if value is None:
        return 0
    try:
        return int(value)
    except ValueError:
        return 0
