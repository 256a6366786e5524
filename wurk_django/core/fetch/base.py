"""The fetcher interface every fetch strategy implements (basic BRPOP, reliable LMOVE)."""

import random
from abc import ABC, abstractmethod

from .. import keys
from ..outage import OutageLog

BLOCK_TIMEOUT_S = 2


class UnitOfWork(ABC):
    """One fetched job: its queue, the payload bytes exactly as fetched, and its fate."""

    __slots__ = ("queue", "job", "jid")

    def __init__(self, queue: str, job: bytes):
        self.queue = queue
        self.job = job
        self.jid: str | None = None  # set by the processor once the payload parses

    @property
    def queue_name(self) -> str:
        return self.queue

    @abstractmethod
    def acknowledge(self) -> None:
        """The job finished (or its failure was booked); forget it."""

    @abstractmethod
    def requeue(self) -> None:
        """Give the job back to its queue so the next fetch takes it first."""


class Fetcher(ABC):
    """Takes jobs for one capsule. Shared by its processor threads; must be thread-safe."""

    def __init__(self, config, capsule, connection):
        self.config = config
        self.capsule = capsule
        self.connection = connection
        # Only the fetcher knows when Redis really answered (a thread waiting for a
        # hand-over did not talk to it), so it owns the outage reports of its capsule.
        self.outage = OutageLog(f"fetch ({capsule.name})", config, "Error fetching job")
        self.ack_outage = OutageLog(f"ack ({capsule.name})", config,
                                    "Error acknowledging jobs (kept for the next round trip)")

    @abstractmethod
    def retrieve_work(self) -> UnitOfWork | None:
        """Block up to about 2 s for a job; None when every queue stayed empty."""

    @abstractmethod
    def bulk_requeue(self, units: list[UnitOfWork]) -> None:
        """Put unfinished jobs back at the fetching end of their queues (shutdown)."""

    def flush_acks(self) -> None:
        """Send every acknowledgement still held back (quiet, stop, shutdown)."""

    def return_prefetched(self) -> None:
        """Give back jobs fetched ahead for threads that never started them (stop)."""

    def quiet(self) -> None:
        """Stop handing out work; called once when the process quiets."""

    def close(self) -> None:
        """Release connections of the fetcher's own."""

    def queue_order(self) -> list[str]:
        """Strict: configured order. Weighted and random: a weighted shuffle, re-drawn
        before every fetch so that no queue starves."""
        capsule = self.capsule
        if capsule.mode == "strict":
            return capsule.queue_names
        expanded = [name for name, weight in capsule.queues for _ in range(max(weight, 1))]
        random.shuffle(expanded)
        return list(dict.fromkeys(expanded))

    def queue_keys(self) -> list[str]:
        return [keys.queue(name) for name in self.queue_order()]
