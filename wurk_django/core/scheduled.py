"""The poller: moves due jobs from `retry` and `schedule` onto their queues.

The reliable scheduler (on by default) reads up to 500 due members, prepares each one in
Python as a push would (client middleware and the features' client hooks see it, with
origin PROMOTION), then moves them in one script: each member is pushed to its queue,
then removed from its set, so a process killed mid-move never loses one. With
`reliable_scheduler=False` each member is popped by a script and pushed through the
client, Sidekiq's own way: one script key each (for Redis Cluster), not crash-safe.
"""

import logging
import random
import time

from . import keys
from .client import CLAIM
from .features import PROMOTION
from .heartbeat import cleanup_processes
from .outage import OutageLog
from .payload import decode_job, dumps
from .redis import REDIS_ERRORS
from .retry import send_to_dead
from .timer_loop import TimerLoop

logger = logging.getLogger("wurk")

INITIAL_WAIT_S = 10
INITIAL_JITTER_S = 5
SMALL_CLUSTER = 10
SETS = (keys.RETRY, keys.SCHEDULE)
PROMOTE_BATCH = 500  # due members per script call
_NOWHERE, _DEAD, _FIRST_QUEUE = 0, 3, 4  # promote_due.lua's KEYS indexes


class Enqueuer:
    """Moves due members to their queues: in batches by script, or one at a time."""

    def __init__(self, config, connection, client):
        self.config = config
        self.connection = connection
        self.client = client
        self.done = False

    def enqueue_jobs(self) -> int:
        if not self.config.reliable_scheduler:
            return self._pop_and_push()
        moved = 0
        for sorted_set in SETS:
            while not self.done:
                due = self.connection.read(self.connection.client.zrangebyscore, sorted_set,
                                           "-inf", repr(time.time()), start=0,
                                           num=PROMOTE_BATCH)
                if due:
                    moved += self._promote(due, sorted_set)
                if len(due) < PROMOTE_BATCH:
                    break
        return moved

    def _promote(self, due: list[bytes], source: str) -> int:
        """Prepare each member as a push would, then move them all in one script."""
        queue_keys: dict[str, int] = {}
        args: list = []
        buried = []
        enqueued_at = self.config.job_clock()
        for raw in due:
            payload, queue = self._prepared(raw, source, enqueued_at)
            if payload is None and queue is None:
                args += (raw, _NOWHERE, b"", "")  # halted by client middleware: dropped
            elif payload is None:
                args += (raw, _DEAD, raw, repr(time.time()))
                buried.append(raw)
            else:
                index = queue_keys.setdefault(keys.queue(queue), _FIRST_QUEUE + len(queue_keys))
                args += (raw, index, payload, queue)
        moved = self.connection.script("promote_due")(
            keys=[source, keys.QUEUES, keys.DEAD, *queue_keys], args=args)
        for raw in buried:
            send_to_dead(self.connection, self.config, raw)  # trims `dead` as every move does
        return int(moved)

    def _prepared(self, raw: bytes, source: str, enqueued_at) -> tuple:
        """(payload, queue) to push; (None, None) when a middleware halted it; (None,
        "dead") when it cannot be pushed (reported; kept in `dead` with its bytes)."""
        client = self.client
        try:
            job = client.normalize(decode_job(raw))
            job.pop("at", None)
            job = client.prepare(job, PROMOTION)
            if job is None:
                return None, None
            job.pop(CLAIM, None)  # no lock is taken for a job moved, only for a new push
            job["enqueued_at"] = enqueued_at
            return dumps(job), job["queue"]
        except REDIS_ERRORS:
            raise
        except Exception as exc:  # noqa: BLE001 - a bad member goes to dead, not the loop
            self._report_bad_member(exc, source, raw)
            return None, "dead"

    def _report_bad_member(self, exc: BaseException, source: str, raw: bytes) -> None:
        self.config.handle_exception(exc, {"context": f"Cannot enqueue a member of {source}; "
                                                      f"moved to the dead set", "jobstr": raw})

    def _pop_and_push(self) -> int:
        script = self.connection.script("pop_by_score")
        moved = 0
        for sorted_set in SETS:
            while not self.done:
                raw = script(keys=[sorted_set], args=[repr(time.time())])
                if raw is None:
                    break
                self._push(raw, sorted_set)
                moved += 1
        return moved

    def _push(self, raw: bytes, source: str) -> None:
        """Push a member the script has already removed from its set. What cannot be
        pushed (not a job, or refused by the client's checks) is kept in `dead` with its
        bytes rather than lost."""
        try:
            self.client.push(decode_job(raw), origin=PROMOTION)
        except REDIS_ERRORS:
            raise
        except Exception as exc:  # noqa: BLE001 - a bad member goes to dead, not the loop
            self._report_bad_member(exc, source, raw)
            send_to_dead(self.connection, self.config, raw)


class Poller:
    """One thread per process; the cluster as a whole polls about every 5 s."""

    def __init__(self, config, connection, client, is_leader=None):
        self.config = config
        self.connection = connection
        self.enqueuer = Enqueuer(config, connection, client)
        self._is_leader = is_leader or (lambda: True)
        self._loop = TimerLoop("wurk-poller", self.random_poll_interval_s, self.tick,
                               on_error=self._report, first_wait_s=self.initial_wait_s,
                               outage=OutageLog("scheduled poller", config))

    def start(self) -> None:
        self.enqueuer.done = False
        self._loop.start()

    def terminate(self) -> None:
        self.enqueuer.done = True
        self._loop.terminate()

    def join(self) -> None:
        self._loop.stop()

    def tick(self) -> None:
        if self._is_leader():  # at most once a minute cluster-wide (its own lock)
            self._guarded(cleanup_processes, self.connection)
        self.enqueuer.enqueue_jobs()

    def _report(self, exc: BaseException) -> None:
        self.config.handle_exception(exc, {"context": "scheduled poller"})

    def _guarded(self, fn, *args) -> None:
        try:
            fn(*args)
        except REDIS_ERRORS:
            raise  # the whole tick fails the same way: one outage report, not two
        except Exception as exc:  # noqa: BLE001 - a bad member: report, go on with the tick
            self._report(exc)

    def initial_wait_s(self) -> float:
        """10 s plus up to 5 s of jitter, so a fleet restarting at once spreads out.

        With a fixed poll average, only the jitter, capped at that average (Wurk), so a
        fast-polling test or small deployment does not wait seconds for its first pass.
        """
        average = self.config.poll_interval_average_s
        if average is not None:
            return random.random() * min(INITIAL_JITTER_S, average)
        return INITIAL_WAIT_S + random.random() * INITIAL_JITTER_S

    def random_poll_interval_s(self) -> float:
        count = self._process_count()
        interval = self.config.poll_interval_average_s
        if interval is None:
            interval = count * self.config.average_scheduled_poll_interval_s
        if count < SMALL_CLUSTER:
            return interval * random.random() + interval / 2
        return interval * random.random() * 2

    def _process_count(self) -> int:
        try:
            return max(int(self.connection.read(self.connection.client.scard, keys.PROCESSES)), 1)
        except REDIS_ERRORS:
            return 1
