"""Reliable push: pushes that find Redis unreachable wait in a bounded in-memory buffer
and are replayed, oldest first, before the next push and by a background drainer.

The buffer lives in the pushing process only (as in Sidekiq Pro's reliable push): a
process that dies with pushes in it loses them, and a forked child starts with an empty
one (only the parent replays what the parent buffered). One ambiguity is left: a push
whose reply was lost (a timeout, a connection reset after Redis applied it) is kept and
replayed, and then its job is in Redis twice.
"""

import itertools
import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable

from . import statsd
from .errors import BufferOverflow, RedisCommandError, RedisUnavailableError
from .outage import NoticeThrottle, OutageLog
from .redis import REDIS_ERRORS
from .timer_loop import TimerLoop

logger = logging.getLogger("wurk")

OVERFLOW_POLICIES = ("drop_oldest", "raise")
DEFAULT_BUFFER = 1000
REPLAY_BATCH = 100        # buffered jobs per replay round trip
DRAIN_INTERVAL_S = 2.0    # the background drainer's cadence
# After a failed attempt, pushes go straight to the buffer for this long: a web process
# must not wait out a socket timeout per request while Redis is known to be away.
RETRY_AFTER_S = 1.0
# Error replies that mean "try again soon", not "this push is refused".
TRANSIENT_REPLIES = ("LOADING", "BUSY", "MASTERDOWN", "TRYAGAIN", "CLUSTERDOWN")


def is_transient(exc: BaseException) -> bool:
    if isinstance(exc, RedisUnavailableError):
        return True
    return isinstance(exc, RedisCommandError) and exc.reply.startswith(TRANSIENT_REPLIES)


def _describe(delivery: tuple) -> str:
    job = delivery[0]
    return f"{job.get('class')} jid={job.get('jid')}"


class PushBuffer:
    """One process's buffer for one Redis; `send(connection, deliveries)` writes them."""

    def __init__(self, connection, config, send: Callable, capacity: int = DEFAULT_BUFFER,
                 overflow: str = "drop_oldest", clock=time.monotonic):
        self.connection = connection
        self.capacity = capacity
        self.overflow = overflow
        self._send = send
        self._clock = clock
        self._entries: deque[tuple[int, tuple]] = deque()  # (sequence, delivery)
        self._sequence = itertools.count()
        self._lock = threading.Lock()
        self._sending = threading.Lock()  # one replay at a time keeps the order
        self._retry_at = 0.0
        self._outage = OutageLog("reliable push", config,
                                 "reliable push: Redis is unavailable; pushes wait in memory")
        self._overflow_notices = NoticeThrottle()
        self._drainer = TimerLoop("wurk-push-drainer", DRAIN_INTERVAL_S, self._drain_tick,
                                  on_error=self._report)
        self._config = config
        # Counters for monitoring and the outage test.
        self.buffered = self.replayed = self.dropped = 0

    def __len__(self) -> int:
        return len(self._entries)

    def push(self, deliveries: list[tuple]) -> set | None:
        """Send now if nothing waits and Redis is not known to be away; else keep the
        push behind the older ones and replay what can go."""
        if not self._entries and self._clock() >= self._retry_at:
            started = self._clock()
            try:
                refused = self._send(self.connection, deliveries)
            except REDIS_ERRORS as exc:
                if not is_transient(exc):
                    raise
                self._failed(exc, started)
                self._keep(deliveries, exc)
                return None
            self._outage.succeeded()
            return refused
        if self.drain():
            return self.push(deliveries)  # nothing waits any more: this one goes now
        self._keep(deliveries, None)
        return None

    def drain(self) -> bool:
        """Replay buffered pushes oldest first; True when none is left. Stops at the first
        transient failure (what was not sent stays at the head); other errors propagate."""
        if not self._entries:
            return True
        if self._clock() < self._retry_at or not self._sending.acquire(blocking=False):
            return False
        try:
            return self._replay()
        finally:
            self._sending.release()

    def _drain_tick(self) -> None:
        self.drain()

    def _replay(self) -> bool:
        while True:
            with self._lock:
                chunk = list(itertools.islice(self._entries, REPLAY_BATCH))
            if not chunk:
                self._outage.succeeded()
                logger.warning("reliable push: every buffered push is delivered (%d replayed "
                               "so far, %d dropped while the buffer was full)",
                               self.replayed, self.dropped)
                return True
            started = self._clock()
            try:
                self._send(self.connection, [delivery for _, delivery in chunk])
            except REDIS_ERRORS as exc:
                if not is_transient(exc):
                    raise
                self._failed(exc, started)
                return False
            last = chunk[-1][0]
            with self._lock:
                # Only what was sent leaves: the overflow may have dropped some meanwhile.
                while self._entries and self._entries[0][0] <= last:
                    self._entries.popleft()
                self.replayed += len(chunk)
            statsd.increment(self._config, "jobs.recovered.push", value=len(chunk))

    def _failed(self, exc: BaseException, started: float) -> None:
        self._retry_at = self._clock() + RETRY_AFTER_S
        self._outage.failed(exc, since=started)

    def _keep(self, deliveries: list[tuple], exc: BaseException | None) -> None:
        """Buffer deliveries; a batch's jobs never wait (their batch would count jobs that
        may never arrive), so they raise after the others are kept."""
        batch_jobs = [d for d in deliveries if "bid" in d[0]]
        if batch_jobs:
            deliveries = [d for d in deliveries if "bid" not in d[0]]
        overflow = self._add(deliveries)
        self._drainer.start()
        if overflow:
            raise BufferOverflow(
                f"reliable push: the buffer holds its maximum of {self.capacity} jobs; "
                f"{len(overflow)} push(es) were not kept (first: {_describe(overflow[0])})",
                payloads=[d[1] for d in overflow])
        if batch_jobs:
            raise exc or RedisUnavailableError("Redis is unavailable and batch jobs are never "
                                               "buffered by reliable push")

    def _add(self, deliveries: list[tuple]) -> list[tuple]:
        """Append; returns what did not fit under the "raise" policy."""
        dropped = []
        with self._lock:
            room = self.capacity - len(self._entries)
            rest = []
            if self.overflow == "raise" and len(deliveries) > room:
                deliveries, rest = deliveries[:max(room, 0)], deliveries[max(room, 0):]
            for delivery in deliveries:
                self._entries.append((next(self._sequence), delivery))
            self.buffered += len(deliveries)
            while len(self._entries) > self.capacity:
                dropped.append(self._entries.popleft()[1])
            self.dropped += len(dropped)
        for delivery in dropped:
            self._overflow_notices.warn("reliable push: the buffer is full (%d jobs); dropped "
                                        "the oldest push, %s", self.capacity,
                                        _describe(delivery))
        if rest:
            logger.warning("reliable push: the buffer is full (%d jobs); refusing %d push(es) "
                           "(OVERFLOW 'raise')", self.capacity, len(rest))
        return rest

    def _report(self, exc: BaseException) -> None:
        self._config.handle_exception(exc, {"context": "reliable push drainer"})

    def stop(self) -> None:
        self._drainer.stop()


_buffers: dict[int, PushBuffer] = {}
_buffers_lock = threading.Lock()


def buffer_for(connection, config, send: Callable) -> PushBuffer:
    """The process's buffer for a connection, made on first use with the config's
    `reliable_push` settings (`{"buffer": n, "overflow": policy}`)."""
    found = _buffers.get(id(connection))
    if found is not None and found.connection is connection:
        return found
    settings = config.reliable_push
    with _buffers_lock:
        found = _buffers.get(id(connection))
        if found is None or found.connection is not connection:
            found = _buffers[id(connection)] = PushBuffer(
                connection, config, send, settings["buffer"], settings["overflow"])
        return found


def reset() -> None:
    """Stop every drainer and forget every buffer and what it holds (tests, shutdown)."""
    with _buffers_lock:
        buffers = list(_buffers.values())
        _buffers.clear()
    for buffer in buffers:
        buffer.stop()


def buffer_size() -> int:
    """Pushes waiting in this process's buffers (for monitoring)."""
    return sum(len(buffer) for buffer in list(_buffers.values()))


def _forget_buffers() -> None:
    # A forked child must not replay its parent's pushes (the parent does), and must not
    # use locks another thread of the parent may have held at the fork.
    global _buffers_lock
    _buffers.clear()
    _buffers_lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_buffers)
