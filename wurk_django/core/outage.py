"""How a component reports trouble it retries on its own: Redis outages and bad payloads.

A worker whose Redis goes away fails the same call many times a second across its
threads. Each component says so once, at WARNING, when the outage starts (through the
error handlers, so Sentry and friends see it too), and once more when it ends, with
how long it really lasted and how many attempts failed. Nothing is logged per attempt.
"""

import logging
import threading
import time

logger = logging.getLogger("wurk")

NOTICE_WINDOW_S = 60.0
NOTICES_PER_WINDOW = 10


class OutageLog:
    """One component's view of its Redis outages; safe to share between threads.

    `failed(exc, since)` takes the monotonic time the failing call *began*: a stopped
    (SIGSTOP) or partitioned server makes each call hang for the socket timeout before
    it fails, and counting from the failure would report a 10 s outage as 3 s.
    """

    def __init__(self, component: str, config, context: str | None = None,
                 clock=time.monotonic):
        self.component = component
        self.config = config
        self.context = context or f"{component}: Redis is unavailable; retrying"
        self._clock = clock
        self._lock = threading.Lock()
        self._started: float | None = None
        self._failures = 0

    @property
    def in_outage(self) -> bool:
        return self._started is not None

    def failed(self, exc: BaseException, since: float | None = None) -> None:
        with self._lock:
            self._failures += 1
            first = self._started is None
            if first:
                self._started = self._clock() if since is None else since
        if first:
            self.config.handle_exception(exc, {"context": self.context})

    def succeeded(self) -> None:
        if self._started is None:  # the common case: no lock, no work
            return
        with self._lock:
            started, failures = self._started, self._failures
            if started is None:
                return
            self._started, self._failures = None, 0
        logger.warning("%s: Redis is reachable again after %.1f s (%d failed attempt%s)",
                       self.component, self._clock() - started, failures,
                       "" if failures == 1 else "s")


class NoticeThrottle:
    """At most `limit` WARNING lines per window for one kind of event, then a count.

    Used where every event matters to an operator (a payload sent to the dead set) but
    a flood of them (thousands of bad pushes) must not drown the log.
    """

    def __init__(self, limit: int = NOTICES_PER_WINDOW, window_s: float = NOTICE_WINDOW_S,
                 clock=time.monotonic):
        self.limit = limit
        self.window_s = window_s
        self._clock = clock
        self._lock = threading.Lock()
        self._window_start = float("-inf")
        self._shown = 0
        self._suppressed = 0

    def warn(self, message: str, *args, **kwargs) -> None:
        with self._lock:
            now = self._clock()
            if now - self._window_start >= self.window_s:
                suppressed, self._suppressed = self._suppressed, 0
                self._window_start, self._shown = now, 0
            else:
                suppressed = 0
            show = self._shown < self.limit
            if show:
                self._shown += 1
            else:
                self._suppressed += 1
        if suppressed:
            logger.warning("(%d more lines of this kind were held back in the last %.0f s)",
                           suppressed, self.window_s)
        if show:
            logger.warning(message, *args, **kwargs)
