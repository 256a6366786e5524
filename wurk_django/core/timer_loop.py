"""The periodic-component primitive: heartbeat, reaper, cron and leader all tick on it."""

import logging
import threading
import time
from collections.abc import Callable

from .outage import OutageLog
from .redis import REDIS_ERRORS

logger = logging.getLogger("wurk")


class TimerLoop:
    """Runs `tick` every `interval_s` on its own daemon thread.

    The first tick comes one interval after start, so a short-lived process never
    ticks; `terminate()` cuts the current wait short; `stop()` joins with a bound and
    keeps the thread reference if the join timed out, so `start()` never runs a second
    copy next to a thread that is still alive.
    """

    JOIN_TIMEOUT_S = 5.0

    def __init__(self, name: str, interval_s: float | Callable[[], float],
                 tick: Callable[[], object],
                 on_error: Callable[[BaseException], None] | None = None,
                 first_wait_s: float | Callable[[], float] | None = None,
                 outage: OutageLog | None = None):
        self.name = name
        # Redis errors go here (once per outage, then a summary) instead of `on_error`.
        self._outage = outage
        self._interval = interval_s
        self._first_wait = first_wait_s
        self._tick = tick
        self._on_error = on_error
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    @staticmethod
    def _seconds(value) -> float:
        return value() if callable(value) else value

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> bool:
        """Start the thread; False if the previous one is still alive (not restarted)."""
        with self._lock:
            if self.running:
                return False
            self.reset()
            self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
            self._thread.start()
            return True

    def _run(self) -> None:
        first = self._first_wait if self._first_wait is not None else self._interval
        if self._done.wait(self._seconds(first)):
            return
        while not self._done.is_set():
            self._run_tick()
            if self._done.wait(self._seconds(self._interval)):
                return

    def _run_tick(self) -> None:
        started = time.monotonic()
        try:
            self._tick()
        except REDIS_ERRORS as exc:
            if self._outage is None:
                self._report(exc)
            else:
                self._outage.failed(exc, since=started)
        except Exception as exc:  # noqa: BLE001 - a raising tick must not end the loop
            self._report(exc)
        else:
            if self._outage is not None:
                self._outage.succeeded()

    def _report(self, exc: BaseException) -> None:
        if self._on_error is not None:
            self._on_error(exc)
        else:
            logger.exception("%s tick failed", self.name)

    def reset(self) -> None:
        """Clear the terminated flag so the loop may run again (start() does this too)."""
        self._done.clear()

    def terminate(self) -> None:
        """Stop after the running tick (if any); wakes the wait at once."""
        self._done.set()

    def stop(self, timeout_s: float | None = None) -> bool:
        """Terminate and join; True if the thread ended within the timeout."""
        self.terminate()
        with self._lock:
            thread = self._thread
            if thread is None:
                return True
            thread.join(self.JOIN_TIMEOUT_S if timeout_s is None else timeout_s)
            if thread.is_alive():
                logger.warning("%s did not stop within %.1f s; keeping its reference so it "
                               "is not started twice", self.name,
                               self.JOIN_TIMEOUT_S if timeout_s is None else timeout_s)
                return False
            self._thread = None
            return True
