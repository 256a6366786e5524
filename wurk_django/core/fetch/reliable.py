"""Reliable fetch: jobs move atomically into this process's private list (pro §1).

A job stays in `queue:<q>|<host>|<pid>|<nonce>|0` until it is acknowledged, so a
process that dies mid-job leaves it where the reaper can give it back.
"""

import os
import threading
import time
from collections import deque

import redis

from .. import keys
from ..identity import hostname, process_nonce
from .base import BLOCK_TIMEOUT_S, Fetcher, UnitOfWork

PAUSED_TTL_S = 2.0
QUIET_PAUSE_S = 0.05


class ReliableUnit(UnitOfWork):
    __slots__ = ("private_queue", "fetcher")

    def __init__(self, queue: str, job: bytes, private_queue: str, fetcher: "ReliableFetch"):
        super().__init__(queue, job)
        self.private_queue = private_queue
        self.fetcher = fetcher

    def acknowledge(self) -> None:
        # Deferred: the next fetch pass of this thread sends it in the same round trip.
        self.fetcher.hold_ack(self)

    def requeue(self) -> None:
        self.fetcher.bulk_requeue([self])


class AckSlot:
    """One processor thread's acknowledgements waiting for its next round trip."""

    __slots__ = ("units", "lock")

    def __init__(self):
        self.units: deque[ReliableUnit] = deque()
        self.lock = threading.Lock()


def add_ack(pipe, unit: ReliableUnit) -> None:
    pipe.lrem(unit.private_queue, 1, unit.job)
    if unit.jid:
        pipe.delete(keys.recovered(unit.jid))


class ReliableFetch(Fetcher):
    """LMOVE/BLMOVE into private lists; acks ride along with the next fetch."""

    def __init__(self, config, capsule, connection):
        super().__init__(config, capsule, connection)
        self._private: tuple[int, dict[str, str]] = (0, {})
        self._paused: tuple[float, frozenset[str]] = (float("-inf"), frozenset())
        self._local = threading.local()
        self._slots: list[AckSlot] = []
        self._slots_lock = threading.Lock()
        # A parked BLMOVE holds its connection for 2 s: give blocking calls their own pool
        # so pushes and acks never wait behind them.
        self._blocking = redis.Redis(connection_pool=redis.BlockingConnectionPool(
            connection_class=connection.pool.connection_class,
            max_connections=capsule.concurrency + 1, timeout=None,
            **{**connection.pool.connection_kwargs,
               "socket_timeout": BLOCK_TIMEOUT_S + config.network_timeout_s}))
        self.quieted = threading.Event()

    # --- names and caches ---------------------------------------------------------

    def private_queue(self, queue: str) -> str:
        pid = os.getpid()
        cached_pid, names = self._private
        if cached_pid != pid:  # after fork(), never claim into the parent's lists
            names = {}
            self._private = (pid, names)
        name = names.get(queue)
        if name is None:
            name = names[queue] = keys.private_queue(queue, hostname(), pid, process_nonce())
        return name

    def paused_queues(self) -> frozenset[str]:
        fetched_at, paused = self._paused
        now = time.monotonic()
        if now - fetched_at >= PAUSED_TTL_S:
            members = self.connection.read(self.connection.client.smembers, keys.PAUSED)
            paused = frozenset(m.decode("utf-8", "replace") for m in members)
            self._paused = (now, paused)
        return paused

    def invalidate_paused(self) -> None:
        self._paused = (float("-inf"), frozenset())

    def fetch_order(self) -> list[str]:
        paused = self.paused_queues()
        return [name for name in self.queue_order() if name not in paused]

    # --- acknowledgements -----------------------------------------------------------

    def _slot(self) -> AckSlot:
        slot = getattr(self._local, "slot", None)
        if slot is None:
            slot = self._local.slot = AckSlot()
            with self._slots_lock:
                self._slots.append(slot)
        return slot

    def hold_ack(self, unit: ReliableUnit) -> None:
        slot = self._slot()
        with slot.lock:
            slot.units.append(unit)

    def _take_one(self, slot: AckSlot) -> ReliableUnit | None:
        with slot.lock:
            return slot.units.popleft() if slot.units else None

    def _give_back(self, slot: AckSlot, units: list[ReliableUnit]) -> None:
        with slot.lock:
            slot.units.extendleft(reversed(units))

    def _flush_slot(self, slot: AckSlot) -> None:
        with slot.lock:
            units = list(slot.units)
            slot.units.clear()
        if not units:
            return
        try:
            pipe = self.connection.pipeline()
            for unit in units:
                add_ack(pipe, unit)
            pipe.execute()
        except Exception:
            self._give_back(slot, units)  # at the front: the oldest acks go first next time
            raise

    def _flush_own(self) -> None:
        """Send this thread's held acks in their own round trip."""
        self._flush_slot(self._slot())

    def flush_acks(self) -> None:
        """Send every thread's held acks (quiet, stop, shutdown); errors propagate."""
        with self._slots_lock:
            slots = list(self._slots)
        for slot in slots:
            self._flush_slot(slot)

    # --- fetching ---------------------------------------------------------------------

    def retrieve_work(self) -> ReliableUnit | None:
        if self.quieted.is_set():
            self._flush_own()
            time.sleep(QUIET_PAUSE_S)
            return None
        order = self.fetch_order()
        if not order:
            self._flush_own()
            self.quieted.wait(BLOCK_TIMEOUT_S)  # never spin when every queue is paused
            return None
        unit = self._fetch_first(order[0])
        if unit is None and len(order) > 1:
            unit = self._fetch_rest(order[1:])
        if unit is None:
            self._flush_own()
            unit = self._fetch_blocking(order[0])
        return unit

    def _fetch_first(self, queue: str) -> ReliableUnit | None:
        """One round trip: this thread's oldest held ack plus an LMOVE."""
        slot = self._slot()
        held = self._take_one(slot)
        private = self.private_queue(queue)
        pipe = self.connection.pipeline()
        if held is not None:
            add_ack(pipe, held)
        pipe.lmove(keys.queue(queue), private, "RIGHT", "LEFT")
        try:
            replies = pipe.execute()
        except Exception:
            if held is not None:
                self._give_back(slot, [held])
            raise
        job = replies[-1]
        return None if job is None else ReliableUnit(queue, job, private, self)

    def _fetch_rest(self, queues: list[str]) -> ReliableUnit | None:
        if len(queues) == 1:
            private = self.private_queue(queues[0])
            job = self.connection.client.lmove(keys.queue(queues[0]), private, "RIGHT", "LEFT")
            return None if job is None else ReliableUnit(queues[0], job, private, self)
        pairs = []
        for queue in queues:
            pairs += [keys.queue(queue), self.private_queue(queue)]
        reply = self.connection.script("fetch_first")(keys=pairs)
        if reply is None:
            return None
        index, job = reply
        queue = queues[int(index) - 1]
        return ReliableUnit(queue, job, self.private_queue(queue), self)

    def _fetch_blocking(self, queue: str) -> ReliableUnit | None:
        private = self.private_queue(queue)
        # On a lost reply the move happened or it did not: the job is in our private
        # list (where the reaper finds it) or still public. Never lost.
        job = self._blocking.blmove(keys.queue(queue), private, BLOCK_TIMEOUT_S, "RIGHT", "LEFT")
        return None if job is None else ReliableUnit(queue, job, private, self)

    # --- shutdown -----------------------------------------------------------------------

    def bulk_requeue(self, units: list[UnitOfWork]) -> None:
        """Flush acks first (never re-run a finished job), then move each unfinished job
        back to its public queue only if it is still in the private list."""
        self.flush_acks()
        if not units:
            return
        script = self.connection.script("reliable_requeue")
        pipe = self.connection.pipeline()
        for unit in units:
            script(keys=[unit.private_queue, keys.queue(unit.queue)], args=[unit.job],
                   client=pipe)
        pipe.execute()

    def quiet(self) -> None:
        self.quieted.set()

    def close(self) -> None:
        self._blocking.connection_pool.disconnect()
