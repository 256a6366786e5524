"""Reliable fetch: jobs move atomically into this process's private list.

A job stays in `queue:<q>|<host>|<pid>|<nonce>|0` until it is acknowledged, so a
process that dies mid-job leaves it where the reaper can give it back.

One thread fetches at a time, for itself and for every thread waiting behind it: a
single round trip carries the acks of finished jobs and moves as many jobs as there
are waiting threads (prefetch without hoarding: nothing is taken that no idle thread
is ready to run). Under load that is well under one round trip per job.

Acks wait in one buffer and leave it as raw command batches only: riding the next
fetch on the fetcher's own socket, or, when no fetch is coming soon (the fetcher is
parked in a blocking wait, the process is quiet or stopping), at once on a pooled
socket of their own. A failed send puts them back in the buffer for the next one.
"""

import queue
import threading
import time
from collections.abc import Sequence
from typing import cast

from .. import identity, keys
from ..errors import ScriptMissingError
from ..identity import hostname, process_nonce
from ..redis import REDIS_ERRORS
from .base import BLOCK_TIMEOUT_S, Fetcher, UnitOfWork

QUIET_PAUSE_S = 0.05
MAX_BATCH = 32


class ReliableUnit(UnitOfWork):
    __slots__ = ("private_queue", "fetcher")

    def __init__(self, queue: str, job: bytes, private_queue: str, fetcher: "ReliableFetch"):
        super().__init__(queue, job)
        self.private_queue = private_queue
        self.fetcher = fetcher

    def acknowledge(self) -> None:
        # Deferred: the next fetch round trip carries it.
        self.fetcher.hold_ack(self)

    def requeue(self) -> None:
        self.fetcher.bulk_requeue([self])


def ack_commands(units) -> list[tuple]:
    commands: list[tuple] = []
    for unit in units:
        commands.append(("LREM", unit.private_queue, 1, unit.job))
        if unit.jid:
            commands.append(("DEL", keys.recovered(unit.jid)))
    return commands


def _raise_errors(replies) -> None:
    for reply in replies:
        if isinstance(reply, Exception):
            raise reply


class ReliableFetch(Fetcher):
    """LMOVE/BLMOVE into private lists; acks and prefetch share each round trip."""

    def __init__(self, config, capsule, connection):
        super().__init__(config, capsule, connection)
        self._private: tuple[int, dict[str, str]] = (0, {})
        # Jobs fetched for waiting threads, and None wake-ups; C-level, so handing a
        # job over costs no Python lock dance.
        self._handoff: queue.SimpleQueue = queue.SimpleQueue()
        self._fetch_lock = threading.Lock()  # held by the one thread fetching for all
        self._lock = threading.Lock()        # guards the three below
        self._acks: list[ReliableUnit] = []
        self._parked = False  # the fetching thread is in a blocking wait (BLMOVE, paused)
        self._waiting = 0     # threads waiting for the handoff
        # Only the thread holding the fetch lock uses it (a socket serves one thread at
        # a time); a parked BLMOVE needs a longer read timeout.
        self._link = connection.dedicated(BLOCK_TIMEOUT_S + config.network_timeout_s)
        self._script_sha: str | None = None
        self.quieted = threading.Event()

    # --- names and caches ---------------------------------------------------------

    def private_queue(self, queue: str) -> str:
        pid = identity.pid()
        cached_pid, names = self._private
        if cached_pid != pid:  # after fork(), never claim into the parent's lists
            names = {}
            self._private = (pid, names)
        name = names.get(queue)
        if name is None:
            name = names[queue] = keys.private_queue(queue, hostname(), pid, process_nonce())
        return name

    # --- acknowledgements -----------------------------------------------------------

    def hold_ack(self, unit: ReliableUnit) -> None:
        """Buffer the ack for the next fetch; send it at once if the fetcher is parked.

        The flag is read under the buffer's lock, the same lock under which the fetcher
        parks and takes the buffer: an ack is either taken before the fetcher parks or
        sees the flag, so none waits out a blocking fetch.
        """
        with self._lock:
            self._acks.append(unit)
            if not self._parked:
                return
        self.flush_acks()

    def _take_acks(self) -> list[ReliableUnit]:
        with self._lock:
            acks, self._acks = self._acks, []
            return acks

    def _acks_failed(self, units: list[ReliableUnit], exc: BaseException,
                     started: float) -> None:
        """Keep acks whose send failed, for the next one; report the outage once."""
        with self._lock:
            self._acks[:0] = units  # at the front: the oldest go first next time
        self.ack_outage.failed(exc, since=started)

    def _send_acks(self, units: list[ReliableUnit]) -> None:
        """Send acks on a pooled socket (the fetcher's own may be parked in BLMOVE)."""
        if not units:
            return
        started = time.monotonic()
        try:
            self.connection.write(self.connection.execute_batch, ack_commands(units))
        except Exception as exc:
            self._acks_failed(units, exc, started)
            raise
        self.ack_outage.succeeded()

    def flush_acks(self) -> None:
        """Send every held ack now; on a Redis error they stay held and it propagates."""
        self._send_acks(self._take_acks())

    def _park(self) -> list[ReliableUnit]:
        """Mark the fetcher parked and take the held acks, in one step under the lock."""
        with self._lock:
            self._parked = True
            acks, self._acks = self._acks, []
            return acks

    def _unpark(self) -> None:
        with self._lock:
            self._parked = False

    # --- fetching ---------------------------------------------------------------------

    def retrieve_work(self) -> ReliableUnit | None:
        if self.quieted.is_set():
            self.flush_acks()
            time.sleep(QUIET_PAUSE_S)
            return None
        unit = self._take_handed()
        if unit is not None:
            return unit
        if self._fetch_lock.acquire(blocking=False):
            return self._fetch_for_all()
        return self._wait_for_handoff()

    def _take_handed(self) -> ReliableUnit | None:
        while True:
            try:
                unit = self._handoff.get_nowait()
            except queue.Empty:
                return None
            if unit is not None:  # None is a stale wake-up; look again
                return unit

    def _wait_for_handoff(self) -> ReliableUnit | None:
        """Another thread is fetching, for us too; wait for its hand-over or wake-up."""
        with self._lock:
            self._waiting += 1
        try:
            return self._handoff.get(timeout=BLOCK_TIMEOUT_S)
        except queue.Empty:
            return None
        finally:
            with self._lock:
                self._waiting -= 1

    def _fetch_for_all(self) -> ReliableUnit | None:
        try:
            with self._lock:
                want = min(self._waiting + 1, MAX_BATCH)
            units = self._fetch(want)
            self.outage.succeeded()
            self.ack_outage.succeeded()  # held acks rode along
        finally:
            self._fetch_lock.release()
        for unit in units[1:]:
            self._handoff.put(unit)
        with self._lock:
            unserved = self._waiting - max(len(units) - 1, 0)
            late_acks = bool(self._acks) and not self._waiting
        if unserved > 0:
            # Wake one waiter to fetch next, for itself and the others still waiting;
            # waking them all would only make them fight for the GIL.
            self._handoff.put(None)
        if late_acks:
            # Acks that arrived during our round trip, and no thread waiting to carry
            # them in the next one: send them now rather than after a long job.
            try:
                self.flush_acks()
            except REDIS_ERRORS:
                pass  # reported and held for the next round trip; the jobs are ours
        return units[0] if units else None

    def _fetch(self, want: int) -> list[ReliableUnit]:
        epoch = self.pause_epoch()
        order = self.fetch_order()
        if not order:
            self._parked_wait(lambda: self.quieted.wait(BLOCK_TIMEOUT_S))  # never spin
            return []
        acks = self._take_acks()
        started = time.monotonic()
        try:
            units = self._fetch_batch(order, want, ack_commands(acks))
        except Exception as exc:
            if acks:
                self._acks_failed(acks, exc, started)
            raise
        if units:
            return units
        return self._parked_wait(lambda: self._fetch_blocking(order[0], epoch))

    def _parked_wait(self, wait):
        """Run a wait of up to 2 s parked: acks held so far go first, and any that
        arrive meanwhile go out at once instead of waiting for the next fetch."""
        acks = self._park()
        try:
            self._send_acks(acks)
            return wait()
        finally:
            self._unpark()

    def _fetch_batch(self, order: list[str], want: int, acks: list[tuple]) -> list[ReliableUnit]:
        """One round trip: the held acks plus an LMOVE (or a batch script) for `want`."""
        if len(order) == 1 and want == 1:
            private = self.private_queue(order[0])
            replies = self._link.execute([*acks, ("LMOVE", keys.queue(order[0]), private,
                                                   "RIGHT", "LEFT")])
            _raise_errors(replies)
            job = replies[-1]
            return [] if job is None else [ReliableUnit(order[0], job, private, self)]
        pairs = []
        for name in order:
            pairs += [keys.queue(name), self.private_queue(name)]
        replies = self._link.execute([*acks, self._evalsha(pairs, want)])
        _raise_errors(replies[:-1])
        reply = replies[-1]
        if isinstance(reply, ScriptMissingError):
            self._script_sha = None  # Redis restarted or SCRIPT FLUSH: load it again
            reply = self._link.execute([self._evalsha(pairs, want)])[-1]
        if isinstance(reply, Exception):
            raise reply
        units = []
        for index in range(0, len(reply), 2):
            name = order[int(reply[index]) - 1]
            units.append(ReliableUnit(name, reply[index + 1], self.private_queue(name), self))
        return units

    def _evalsha(self, pairs: list[str], want: int) -> tuple:
        if self._script_sha is None:
            script = self.connection.script("fetch_batch")
            self._script_sha = self._link.call("SCRIPT", "LOAD", script.source).decode()
        return ("EVALSHA", self._script_sha, len(pairs), *pairs, want)

    def _fetch_blocking(self, queue: str, epoch: int) -> list[ReliableUnit]:
        private = self.private_queue(queue)
        # On a lost reply the move happened or it did not: the job is in our private
        # list (where the reaper finds it) or still public. Never lost.
        job = self._link.call("BLMOVE", keys.queue(queue), private, "RIGHT", "LEFT",
                              BLOCK_TIMEOUT_S)
        if job is None:
            return []
        unit = ReliableUnit(queue, job, private, self)
        if self.paused_since(queue, epoch):  # paused here while we were parked on it
            self.bulk_requeue([unit])
            return []
        return [unit]

    # --- shutdown -----------------------------------------------------------------------

    def bulk_requeue(self, units: Sequence[UnitOfWork]) -> None:
        """Flush acks first (never re-run a finished job), then move each unfinished job
        back to its public queue only if it is still in the private list."""
        self.flush_acks()
        if not units:
            return
        script = self.connection.script("reliable_requeue")
        pipe = self.connection.pipeline()
        for unit in cast(Sequence[ReliableUnit], units):  # this fetcher's own units
            script(keys=[unit.private_queue, keys.queue(unit.queue)], args=[unit.job],
                   client=pipe)
        pipe.execute()

    def return_prefetched(self) -> None:
        """Give back jobs fetched for threads that never started them."""
        units = []
        while (unit := self._take_handed()) is not None:
            units.append(unit)
        self.bulk_requeue(units)

    def quiet(self) -> None:
        self.quieted.set()
        for _ in range(self.capsule.concurrency):
            self._handoff.put(None)  # wake every waiting thread at once

    def close(self) -> None:
        self._link.close()
