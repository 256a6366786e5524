"""Process registration: the heartbeat, busy snapshot, remote signals and cleanup."""

import logging
import time
from collections.abc import Callable

from . import keys
from .config import PROCESS_TTL_S
from .identity import rss_kb
from .outage import OutageLog
from .payload import dumps
from .redis import REDIS_ERRORS
from .stats import flush_counters
from .timer_loop import TimerLoop

logger = logging.getLogger("wurk")

CLEANUP_LOCK_S = 60
SLOW_RTT_US = 50_000
SLOW_RTT_READINGS = 5
REMOTE_SIGNALS = ("TSTP", "TERM", "INT", "TTIN", "USR2")


class Heartbeat:
    """Beats every `heartbeat_interval_s` (10 s): stats, work hash, identity hash, signals.

    Args:
        info_json: the identity hash's `info` field, fixed for the life of the process.
        counters, metrics: drained into Redis at each beat (metrics not at `clear()`:
            the launcher flushes them last, after the final jobs).
        work: a snapshot of the running jobs, `{tid: (queue, payload, run_at)}`.
        is_quiet: whether the process has stopped fetching (the hash's `quiet` field).
        on_signal: called with a remote signal's name (TSTP, TERM, ...) on this thread.
    """

    def __init__(self, config, connection, identity: str, info_json: bytes, *, counters,
                 metrics, work: Callable[[], dict], is_quiet: Callable[[], bool],
                 on_signal: Callable[[str], None]):
        self.config = config
        self.connection = connection
        self.identity = identity
        self.info_json = info_json
        self.counters = counters
        self.metrics = metrics
        self._work = work
        self._is_quiet = is_quiet
        self._on_signal = on_signal
        self._loop = TimerLoop("wurk-heartbeat", self.config.heartbeat_interval_s, self.beat)
        self._rtt_readings: list[int] = []
        self._outage = OutageLog("heartbeat", self.config, "heartbeat")
        # Monotonic time the last beat that reached Redis ended (health probes read it).
        self.last_success: float | None = None

    @property
    def running(self) -> bool:
        """Whether the beating thread is alive (the first beat runs on the caller's)."""
        return self._loop.running

    @property
    def in_outage(self) -> bool:
        """Whether the last beat failed to reach Redis."""
        return self._outage.in_outage

    def start(self) -> None:
        """Beat once now (so the process shows up at once), then every interval."""
        self.beat()
        self._loop.start()

    def stop(self) -> None:
        self._loop.stop()

    def beat(self) -> None:
        """One beat; every failure is logged and the next beat tries again."""
        started = time.monotonic()
        try:
            flush_counters(self.connection, self.counters)
            self.metrics.flush(self.connection)
            busy = self._write_work()
            rtt_us = self._measure_rtt()
            existed, signal = self._write_identity(busy, rtt_us)
        except REDIS_ERRORS as exc:
            self._outage.failed(exc, since=started)
            return
        self.last_success = time.monotonic()
        self._outage.succeeded()
        if not existed:
            self.config.fire_event("heartbeat")
        self.config.fire_event("beat")
        if signal is not None:
            self._deliver(signal.decode("utf-8", "replace"))

    def _write_work(self) -> int:
        work = self._work()
        work_key = keys.work(self.identity)
        pipe = self.connection.pipeline(transaction=True)
        pipe.unlink(work_key)
        if work:
            pipe.hset(work_key, mapping={
                tid: dumps({"queue": queue, "payload": payload.decode("utf-8", "replace"),
                            "run_at": run_at})
                for tid, (queue, payload, run_at) in work.items()})
            pipe.expire(work_key, PROCESS_TTL_S)
        pipe.execute()
        return len(work)

    def _measure_rtt(self) -> int:
        started = time.monotonic_ns()
        self.connection.write(self.connection.client.ping)  # once: a retry would skew it
        rtt_us = (time.monotonic_ns() - started) // 1000
        readings = self._rtt_readings
        readings.append(rtt_us)
        if len(readings) >= SLOW_RTT_READINGS:
            if all(reading > SLOW_RTT_US for reading in readings):
                logger.warning("Your Redis network connection is performing extremely "
                               "poorly. Last RTT readings were %s (us); ideally these "
                               "should be < 1000.", readings)
            readings.clear()
        return rtt_us

    def _write_identity(self, busy: int, rtt_us: int) -> tuple[bool, bytes | None]:
        fields = {
            "info": self.info_json,
            "busy": busy,
            "beat": repr(time.time()),
            "quiet": "true" if self._is_quiet() else "false",
            "rss": rss_kb(),
            "rtt_us": rtt_us,
            "concurrency": self.config.total_concurrency,
        }
        pipe = self.connection.pipeline(transaction=True)
        pipe.sadd(keys.PROCESSES, self.identity)
        pipe.exists(self.identity)
        pipe.hset(self.identity, mapping=fields)
        pipe.expire(self.identity, PROCESS_TTL_S)
        pipe.rpop(keys.signals(self.identity))
        replies = pipe.execute()
        return bool(replies[1]), replies[4]

    def _deliver(self, name: str) -> None:
        if name not in REMOTE_SIGNALS:
            logger.warning("Ignoring unknown remote signal %r", name)
            return
        if self.config.embedded:
            logger.info("Ignoring remote signal %s in an embedded worker", name)
            return
        self._on_signal(name)

    def clear(self) -> None:
        """Unregister at graceful stop; best effort, as the identity hash expires anyway."""
        try:
            flush_counters(self.connection, self.counters)
            pipe = self.connection.pipeline()
            pipe.srem(keys.PROCESSES, self.identity)
            pipe.unlink(keys.work(self.identity))
            pipe.execute()
        except REDIS_ERRORS as exc:
            logger.warning("Could not unregister %s at stop: %s", self.identity, exc)


def cleanup_processes(connection) -> int:
    """Drop `processes` members whose identity hash is gone; at most once a minute cluster-wide."""
    client = connection.client
    if not connection.write(client.set, keys.PROCESS_CLEANUP, "1", nx=True,
                            ex=CLEANUP_LOCK_S):
        return 0
    members = list(connection.sscan(keys.PROCESSES))
    if not members:
        return 0
    pipe = connection.pipeline()
    for member in members:
        pipe.hget(member, "info")
    infos = pipe.execute()
    dead = [member for member, info in zip(members, infos) if info is None]
    if dead:
        connection.write(client.srem, keys.PROCESSES, *dead)
    return len(dead)
