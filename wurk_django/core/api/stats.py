"""Cluster-wide numbers: lifetime counters, set sizes, queue sizes and daily history."""

from datetime import UTC, date, datetime, timedelta

from .. import keys
from .base import ApiObject, WrongTypeError, text
from .records import enqueued_latency

STAT_KINDS = ("processed", "failed")
HISTORY_MAX_DAYS = 5 * 365  # per-day counters live five years, as Sidekiq keeps them
DEFAULT_QUEUE = "default"
UNKNOWN = object()  # a reply whose key held the wrong type


class Stats(ApiObject):
    """A snapshot read in two pipelined round trips when the object is built.

    The first trip fetches the counters, set sizes and the member lists; the second
    the busy count of every process and the length of every queue. A key holding
    the wrong type (another tool's data, a hand-made `SET queue:w x`) leaves its
    number None and a sentence in `problems`; every other number is still read.
    """

    def __init__(self, config=None):
        super().__init__(config)
        self.problems: list[str] = []
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

        replies = [self._known(reply) for reply in self._pipelined(first, partial=True)]
        processed, failed, scheduled, retries, dead, processes, queues, oldest = replies
        identities = [] if processes is UNKNOWN else sorted(text(p) for p in processes)
        queue_names = [] if queues is UNKNOWN else sorted(text(q) for q in queues)

        def second(pipe):
            for identity in identities:
                pipe.hget(identity, "busy")
            for name in queue_names:
                pipe.llen(keys.queue(name))

        later = self._pipelined(second, partial=True) if identities or queue_names else []
        later = [self._known(reply) for reply in later]
        busy, lengths = later[:len(identities)], later[len(identities):]
        self.processed = None if processed is UNKNOWN else _int(processed)
        self.failed = None if failed is UNKNOWN else _int(failed)
        self.scheduled_size, self.retry_size, self.dead_size = (
            None if size is UNKNOWN else int(size) for size in (scheduled, retries, dead))
        self.processes_size = None if processes is UNKNOWN else len(identities)
        self.workers_size = sum(_int(b) for b in busy if b is not UNKNOWN)
        sizes = [(name, None if n is UNKNOWN else int(n)) for name, n in zip(queue_names, lengths)]
        sizes.sort(key=lambda q: (-(q[1] or 0), q[0]))
        self.queues: dict[str, int | None] = dict(sizes)
        self.enqueued = None if queues is UNKNOWN else sum(n for n in self.queues.values() if n)
        self.default_queue_latency = None if oldest is UNKNOWN else enqueued_latency(oldest)

    def _known(self, reply):
        """The reply, or UNKNOWN (with the problem noted) when its key had the wrong type."""
        if isinstance(reply, WrongTypeError):
            self.problems.append(str(reply))
            return UNKNOWN
        return reply

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
            start_date = start_date.astimezone(UTC).date()
        self.days_previous = days_previous
        self.start_date = start_date or datetime.now(UTC).date()
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
