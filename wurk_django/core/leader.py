"""Cluster leadership: one process holds `dear-leader` and alone runs the
cluster-wide periodic work; components ask through a cached check."""

import logging
import os
import threading
import time
from collections.abc import Callable

from . import keys
from .outage import OutageLog
from .redis import REDIS_ERRORS
from .timer_loop import TimerLoop

logger = logging.getLogger("wurk")

INITIAL_WAIT_S = 1.0
CACHE_S = 5.0
OPT_OUT_VARIABLES = ("WURK_LEADER", "SIDEKIQ_LEADER")


def opted_out(environ=None) -> bool:
    """True if `WURK_LEADER=false` (or Sidekiq's `SIDEKIQ_LEADER=false`) keeps us out."""
    environ = os.environ if environ is None else environ
    return any(environ.get(name, "").strip().lower() == "false" for name in OPT_OUT_VARIABLES)


class Leader:
    """Campaigns on its own thread: renews every `leader_renew_s` while leading, tries
    every `leader_retry_s` otherwise, the first time one second after start.

    Best effort, not consensus: a stalled ex-leader may overlap a new one until its
    lock expires, so leader-gated work must tolerate a short double run.
    """

    def __init__(self, config, connection, identity: str, *, enabled: bool | None = None):
        self.config = config
        self.connection = connection
        self.identity = identity
        self.enabled = not opted_out() if enabled is None else enabled
        self.held = False
        self.token: int | None = None  # fencing token of the current term
        # Bumped on every gain and loss: cached checks read before it are void.
        self.generation = 0
        self._on_gain: list[Callable[[], None]] = []
        self._lock = threading.Lock()
        self._outage = OutageLog("leader election", config, "leader election")
        self._loop = TimerLoop("wurk-leader", self._wait_s, self.campaign,
                               on_error=self._report, first_wait_s=INITIAL_WAIT_S)

    def on_gain(self, callback: Callable[[], None]) -> None:
        """Run `callback` in the leader thread whenever this process becomes leader."""
        self._on_gain.append(callback)

    def start(self) -> bool:
        return self.enabled and self._loop.start()

    def stop(self, timeout_s: float | None = None) -> bool:
        """Stop campaigning, then hand the lock over at once instead of after its TTL."""
        joined = self._loop.stop(timeout_s)
        self.release()
        return joined

    def check(self) -> "LeaderCheck":
        """A cached leadership check for one component."""
        return LeaderCheck(self)

    def campaign(self) -> bool:
        """Take or renew the lock; True if this process leads after the round."""
        if not self.enabled:
            return False
        ttl_ms = max(int(self.config.leader_ttl_s * 1000), 1)
        started = time.monotonic()
        try:
            token = int(self.connection.script("leader_campaign")(
                keys=[keys.LEADER, keys.LEADER_TOKEN],
                args=[self.identity, ttl_ms, "1" if self.held else "0"]))
        except REDIS_ERRORS as exc:
            self._outage.failed(exc, since=started)  # state unchanged; next round retries
            return self.held
        self._outage.succeeded()
        with self._lock:
            if not token:
                if self.held:
                    logger.info("Leadership passed to another process")
                self._set(False, None)
                return False
            # A different token while "holding" means our lock lapsed and was re-taken.
            gained = not self.held or token != self.token
            self._set(True, token)
        if gained:
            logger.info("Became the cluster leader (token %d)", token)
            for callback in self._on_gain:
                try:
                    callback()
                except Exception as exc:  # noqa: BLE001 - a callback's error must not stop the rest
                    self._report(exc)
        return True

    def release(self) -> bool:
        """Delete the lock if we still own it; True if it was ours."""
        if not self.enabled:
            return False
        try:
            released = bool(self.connection.script("leader_release")(
                keys=[keys.LEADER], args=[self.identity]))
        except REDIS_ERRORS as exc:
            self._report(exc)  # it expires after its TTL anyway
            released = False
        with self._lock:
            self._set(False, None)
        return released

    def _set(self, held: bool, token: int | None) -> None:
        if held != self.held or token != self.token:
            self.generation += 1
        self.held, self.token = held, token

    def _wait_s(self) -> float:
        return self.config.leader_renew_s if self.held else self.config.leader_retry_s

    def _report(self, exc: BaseException) -> None:
        self.config.handle_exception(exc, {"context": "leader election"})


class LeaderCheck:
    """`GET dear-leader == identity`, cached for 5 s; False on any Redis error.

    Never trusts the elector's in-memory flag, only re-reads early when the elector
    saw leadership change. For up to 5 s after a hand-over two processes may both
    answer True: leader-gated work must tolerate that (cron claims each slot atomically).
    """

    def __init__(self, leader: Leader, cache_s: float = CACHE_S,
                 clock: Callable[[], float] = time.monotonic):
        self.leader = leader
        self.cache_s = cache_s
        self._clock = clock
        self._answer = False
        self._read_at: float | None = None
        self._generation = -1

    def __call__(self) -> bool:
        leader = self.leader
        if not leader.enabled:
            return False
        now = self._clock()
        if (self._read_at is not None and now - self._read_at < self.cache_s
                and self._generation == leader.generation):
            return self._answer
        generation = leader.generation
        connection = leader.connection
        try:
            value = connection.read(connection.client.get, keys.LEADER)
        except REDIS_ERRORS:
            self._read_at = None
            return False
        if isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        self._answer = value == leader.identity
        self._read_at, self._generation = now, generation
        return self._answer
