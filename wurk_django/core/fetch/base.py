"""The fetcher interface every fetch strategy implements (basic BRPOP, reliable LMOVE)."""

import itertools
import random
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence

from .. import keys
from ..outage import OutageLog

BLOCK_TIMEOUT_S = 2
# The `paused` set is re-read at most this often: pausing is rare, and an SMEMBERS before
# every fetch would add a round trip per job. Other processes see a pause within it.
PAUSED_TTL_S = 2.0

_pause_epochs = itertools.count(1)
_pause_epoch = 0  # bumped (atomically, by the count) whenever this process pauses or unpauses


def paused_set_changed() -> None:
    """This process paused or unpaused a queue: every fetcher in it re-reads the `paused`
    set before its next fetch, instead of up to 2 s later."""
    global _pause_epoch
    _pause_epoch = next(_pause_epochs)


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
        self._paused: tuple[float, int, frozenset[str]] = (float("-inf"), 0, frozenset())
        # Only the fetcher knows when Redis really answered (a thread waiting for a
        # hand-over did not talk to it), so it owns the outage reports of its capsule.
        self.outage = OutageLog(f"fetch ({capsule.name})", config, "Error fetching job")
        self.ack_outage = OutageLog(f"ack ({capsule.name})", config,
                                    "Error acknowledging jobs (kept for the next round trip)")

    @abstractmethod
    def retrieve_work(self) -> UnitOfWork | None:
        """Block up to about 2 s for a job; None when every queue stayed empty."""

    @abstractmethod
    def bulk_requeue(self, units: Sequence[UnitOfWork]) -> None:
        """Put unfinished jobs back at the fetching end of their queues (shutdown)."""

    # Optional hooks: no-ops here, overridden by the fetchers that need them.

    def flush_acks(self) -> None:  # noqa: B027 - an optional hook, empty on purpose
        """Send every acknowledgement still held back (quiet, stop, shutdown)."""

    def return_prefetched(self) -> None:  # noqa: B027 - an optional hook, empty on purpose
        """Give back jobs fetched ahead for threads that never started them (stop)."""

    def quiet(self) -> None:  # noqa: B027 - an optional hook, empty on purpose
        """Stop handing out work; called once when the process quiets."""

    def close(self) -> None:  # noqa: B027 - an optional hook, empty on purpose
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

    # --- paused queues (shared by every fetcher) -------------------------------------

    def paused_queues(self) -> frozenset[str]:
        """The `paused` set, as of at most 2 s ago or this process's last pause/unpause."""
        fetched_at, epoch, paused = self._paused
        now, current = time.monotonic(), _pause_epoch  # the epoch read BEFORE the set
        if epoch != current or now - fetched_at >= PAUSED_TTL_S:
            members = self.connection.read(self.connection.client.smembers, keys.PAUSED)
            paused = frozenset(m.decode("utf-8", "replace") for m in members)
            self._paused = (now, current, paused)
        return paused

    def invalidate_paused(self) -> None:
        self._paused = (float("-inf"), 0, frozenset())

    def fetch_order(self) -> list[str]:
        """`queue_order()` without the paused queues."""
        paused = self.paused_queues()
        return [name for name in self.queue_order() if name not in paused]

    @staticmethod
    def pause_epoch() -> int:
        return _pause_epoch

    def paused_since(self, queue: str, epoch: int) -> bool:
        """True if this process paused `queue` after `epoch` was read: a blocking pop
        parked before the pause must give back what it took from that queue."""
        return _pause_epoch != epoch and queue in self.paused_queues()
