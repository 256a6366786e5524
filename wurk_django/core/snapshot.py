"""The cluster's numbers read in one round trip (one Lua call): counters, set sizes, every
queue's size and latency, every live process's busy threads. The Prometheus exporter and
the history snapshot both read it; its cost grows with queues and processes, never jobs."""

import time
from dataclasses import dataclass, field

from . import keys
from .payload import to_epoch_seconds

SCRIPT = "cluster_snapshot"


@dataclass(frozen=True)
class QueueSnapshot:
    name: str
    size: int | None  # None: the key holds another type than a list
    latency_s: float  # seconds since the oldest job was enqueued; 0.0 when empty
    paused: bool


@dataclass(frozen=True)
class ProcessSnapshot:
    identity: str
    busy: int
    concurrency: int


@dataclass(frozen=True)
class ClusterSnapshot:
    """None stands for a number whose key held another type (another tool's data)."""

    processed: int | None
    failed: int | None
    scheduled: int | None
    retries: int | None
    dead: int | None
    queues: tuple[QueueSnapshot, ...] = ()
    processes: tuple[ProcessSnapshot, ...] = ()
    limiters: int = 0  # rate limiters named in `lmtr-list` (their use is read apart)
    taken_at: float = field(default_factory=time.time)

    @property
    def enqueued(self) -> int:
        return sum(queue.size or 0 for queue in self.queues)

    @property
    def busy(self) -> int:
        return sum(process.busy for process in self.processes)

    @property
    def concurrency(self) -> int:
        return sum(process.concurrency for process in self.processes)


def read_snapshot(connection) -> ClusterSnapshot:
    """Run the snapshot script once; raises a Wurk RedisFailure when Redis fails."""
    script = connection.script(SCRIPT)
    reply = connection.read(script, keys=[keys.STAT_PROCESSED, keys.STAT_FAILED, keys.SCHEDULE,
                                          keys.RETRY, keys.DEAD, keys.QUEUES, keys.PROCESSES,
                                          keys.PAUSED, keys.LIMITER_LIST],
                            args=[keys.QUEUE_PREFIX])
    return parse(reply, time.time())


def parse(reply: list, now: float) -> ClusterSnapshot:
    processed, failed, scheduled, retries, dead, queues, processes, limiters = reply
    return ClusterSnapshot(
        processed=_counter(processed), failed=_counter(failed), scheduled=_size(scheduled),
        retries=_size(retries), dead=_size(dead),
        queues=tuple(sorted(_queues(queues, now), key=lambda q: q.name)),
        processes=tuple(ProcessSnapshot(_text(processes[i]), int(processes[i + 1]),
                                        int(processes[i + 2]))
                        for i in range(0, len(processes), 3)),
        limiters=_size(limiters) or 0, taken_at=now)


def _queues(flat: list, now: float):
    for i in range(0, len(flat), 4):
        name, size, enqueued_at, paused = flat[i:i + 4]
        size = _size(size)
        seconds = to_epoch_seconds(_text(enqueued_at)) if enqueued_at and size else None
        latency = max(now - seconds, 0.0) if seconds is not None else 0.0
        yield QueueSnapshot(_text(name), size, latency, bool(paused))


def _counter(value) -> int | None:
    """A `stat:` counter: missing reads as zero, text that is no number as None."""
    if value is None:
        return 0
    try:
        return int(value)
    except ValueError:
        return None


def _size(value) -> int | None:
    return None if value is None or int(value) < 0 else int(value)


def _text(value) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
