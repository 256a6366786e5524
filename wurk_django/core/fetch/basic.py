"""Sidekiq OSS's fetcher: BRPOP across the capsule's queues, no acknowledgement."""

import threading
from collections import defaultdict
from collections.abc import Sequence

from .. import keys
from .base import BLOCK_TIMEOUT_S, Fetcher, UnitOfWork


class BasicUnit(UnitOfWork):
    __slots__ = ("fetcher",)

    def __init__(self, queue: str, job: bytes, fetcher: "BasicFetch"):
        super().__init__(queue, job)
        self.fetcher = fetcher

    def acknowledge(self) -> None:
        # BRPOP already removed the job; a crash mid-job loses it (use reliable fetch).
        pass

    def requeue(self) -> None:
        connection = self.fetcher.connection
        connection.write(connection.client.rpush, keys.queue(self.queue), self.job)


class BasicFetch(Fetcher):
    """BRPOP with a 2 s block over the queues not paused; the pool's socket timeout must
    be longer than that block."""

    def __init__(self, config, capsule, connection):
        super().__init__(config, capsule, connection)
        self._quieted = threading.Event()

    def retrieve_work(self) -> BasicUnit | None:
        epoch = self.pause_epoch()
        order = self.fetch_order()
        if not order:
            self._quieted.wait(BLOCK_TIMEOUT_S)  # every queue paused: never spin
            return None
        # A write, never retried: a lost reply may already have popped a job.
        connection = self.connection
        reply = connection.write(connection.client.brpop, [keys.queue(n) for n in order],
                                 timeout=BLOCK_TIMEOUT_S)
        self.outage.succeeded()
        if reply is None:
            return None
        key, job = reply
        unit = BasicUnit(key.decode("utf-8")[len(keys.QUEUE_PREFIX):], job, self)
        if self.paused_since(unit.queue, epoch):  # paused here while BRPOP was parked
            unit.requeue()
            return None
        return unit

    def quiet(self) -> None:
        self._quieted.set()

    def bulk_requeue(self, units: Sequence[UnitOfWork]) -> None:
        by_queue: dict[str, list[bytes]] = defaultdict(list)
        for unit in units:
            by_queue[unit.queue].append(unit.job)
        if not by_queue:
            return

        def send():
            pipe = self.connection.pipeline()
            for queue, jobs in by_queue.items():
                pipe.rpush(keys.queue(queue), *jobs)
            pipe.execute()

        self.connection.write(send)
