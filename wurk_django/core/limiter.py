"""Rate limiters shared by every process on one Redis: concurrent, bucket, window, leaky
and points, as Sidekiq Enterprise's `Sidekiq::Limiter`; `within_limit`, the context form,
`Limiter.unlimited()` and `Limiter.configure()`.

A limiter is a name and its options; building one touches no Redis. It registers itself
(meta hash and dashboard list) in the same round trip as its first call in a process.
Names are meant to be interpolated (`f"stripe-{account_id}"`): every key expires, and
the dashboard's list is swept of names whose meta expired.
"""

import hashlib
import json
import logging
import math
import re
import time
from collections.abc import Callable, Iterable
from typing import Any, ParamSpec, Self, TypeVar

from . import keys
from .errors import OverLimit
from .limiter_algorithms import (
    SCRIPTS,
    SETTINGS,
    UNITS,
    Algorithm,
    Bucket,
    Concurrent,
    Leaky,
    Points,
    Window,
    parse_attempt,
    read_status,
    slot_id,
    sweep_sample,
)
from .limiter_reschedule import claim_errors
from .redis import REDIS_ERRORS

logger = logging.getLogger("wurk")
_UNSET: Any = object()
_P = ParamSpec("_P")
_R = TypeVar("_R")
# (limiter, job, exc) -> seconds until the rescheduled job runs again.
Backoff = Callable[["Limiter", dict, BaseException], float]

NAME = re.compile(r"[A-Za-z0-9_\-:.#@]+")
DEFAULT_TTL_S = 7_776_000  # 90 days
MIN_TTL_S = 86_400
DEFAULT_RESCHEDULE = 20
POLICIES = {"raise": "raise", "ignore": "ignore", "skip": "ignore"}
MIN_SLEEP_S = 0.005
CONCURRENT_POLL_S = 0.05  # no event tells a waiter a slot freed: it asks again this often
# A process registers each limiter again this often at most (it refreshes the meta's
# expiry); the cache of names it registered is dropped whole when it grows past the cap.
REGISTER_EVERY_S = 3600
REGISTERED_CAP = 10_000
SWEEP_EVERY_S = 600




def _positive(label: str, value, *, whole: bool = True, zero: bool = False):
    kinds = (int,) if whole else (int, float)
    ok = isinstance(value, kinds) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or value < 0 or (value == 0 and not zero):
        need = "a whole number" if whole else "a number"
        raise ValueError(f"{label} must be {need} {'>= 0' if zero else '> 0'}, got {value!r}")
    return value


def _seconds(label: str, value) -> float:
    """A number of seconds, or a unit name (second, minute, hour, day)."""
    if isinstance(value, str):
        if value not in UNITS:
            raise ValueError(f"{label} must be seconds or one of {', '.join(UNITS)}, "
                             f"got {value!r}")
        return UNITS[value]
    return _positive(label, value, whole=False)


def _common(name, policy, ttl, reschedule, backoff, wait_timeout=None) -> dict:
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise ValueError(f"a limiter name must be letters, digits and _-:.#@ only, "
                         f"got {name!r}")
    if policy not in POLICIES:
        raise ValueError(f"policy must be 'raise', 'ignore' or 'skip', got {policy!r}")
    _positive("ttl", ttl)
    if ttl < MIN_TTL_S:
        raise ValueError(f"ttl must be at least {MIN_TTL_S} seconds (one day), got {ttl!r}")
    _positive("reschedule", reschedule, zero=True)
    if backoff is not None and not callable(backoff):
        raise ValueError(f"backoff must be callable (limiter, job, exc) -> seconds, "
                         f"got {backoff!r}")
    options = {"policy": POLICIES[policy], "ttl": ttl, "reschedule": reschedule,
               "backoff": backoff}
    if wait_timeout is not None:
        options["wait_timeout"] = _positive("wait_timeout", wait_timeout, whole=False,
                                            zero=True)
    return options


class Limiter:
    """A named limit on calls, enforced across every process using the same Redis.

    Build one with a factory (`Limiter.concurrent(...)` and its siblings), once at import
    time for a fixed name or per call for an interpolated one; both are cheap.
    """

    def __init__(self, algorithm: Algorithm):
        self._algorithm = algorithm
        self.name = algorithm.name
        self.type = algorithm.type
        self.options = algorithm.options
        self._meta: tuple[str, str] | None = None

    # --- factories ------------------------------------------------------------------

    @classmethod
    def concurrent(cls, name: str, size: int, *, wait_timeout: float = 5,
                   lock_timeout: float = 30, policy: str = "raise", ttl: int = DEFAULT_TTL_S,
                   reschedule: int = DEFAULT_RESCHEDULE,
                   backoff: Backoff | None = None) -> "Limiter":
        """At most `size` calls inside at once; a slot is a lease of `lock_timeout` s."""
        options = _common(name, policy, ttl, reschedule, backoff, wait_timeout)
        options.update(size=_positive("size", size),
                       lock_timeout=_positive("lock_timeout", lock_timeout, whole=False))
        return cls(Concurrent(name, options))

    @classmethod
    def bucket(cls, name: str, count: int, unit: str, *, wait_timeout: float = 5,
               policy: str = "raise", ttl: int = DEFAULT_TTL_S,
               reschedule: int = DEFAULT_RESCHEDULE,
               backoff: Backoff | None = None) -> "Limiter":
        """`count` calls per second, minute, hour or day, starting afresh at each one."""
        if unit not in UNITS:
            raise ValueError(f"unit must be one of {', '.join(UNITS)}, got {unit!r}")
        options = _common(name, policy, ttl, reschedule, backoff, wait_timeout)
        options.update(count=_positive("count", count), unit=unit, interval=UNITS[unit])
        return cls(Bucket(name, options))

    @classmethod
    def window(cls, name: str, count: int, interval: float | str, *, wait_timeout: float = 5,
               policy: str = "raise", ttl: int = DEFAULT_TTL_S,
               reschedule: int = DEFAULT_RESCHEDULE,
               backoff: Backoff | None = None) -> "Limiter":
        """At most `count` calls in any `interval` (seconds or a unit name), sliding."""
        options = _common(name, policy, ttl, reschedule, backoff, wait_timeout)
        options.update(count=_positive("count", count),
                       interval=_seconds("interval", interval))
        return cls(Window(name, options))

    @classmethod
    def leaky(cls, name: str, size: int, drain: float | str, *, wait_timeout: float = 5,
              policy: str = "raise", ttl: int = DEFAULT_TTL_S,
              reschedule: int = DEFAULT_RESCHEDULE,
              backoff: Backoff | None = None) -> "Limiter":
        """Bursts of up to `size` calls, then `size` per `drain` (seconds or a unit)."""
        options = _common(name, policy, ttl, reschedule, backoff, wait_timeout)
        options.update(size=_positive("size", size), drain=_seconds("drain", drain))
        return cls(Leaky(name, options))

    @classmethod
    def points(cls, name: str, capacity: int, refill: float, *, policy: str = "raise",
               ttl: int = DEFAULT_TTL_S, reschedule: int = DEFAULT_RESCHEDULE,
               backoff: Backoff | None = None) -> "Limiter":
        """`capacity` points refilled at `refill` per second; a call spends its estimate
        and is refused at once (no waiting) when the points are not there."""
        options = _common(name, policy, ttl, reschedule, backoff)
        options.update(capacity=_positive("capacity", capacity),
                       refill=_positive("refill", refill, whole=False))
        return cls(Points(name, options))

    @staticmethod
    def unlimited() -> "Unlimited":
        """A limiter that admits everything and touches no Redis (tests, feature flags)."""
        return Unlimited()

    @staticmethod
    def configure(*, backoff: Backoff | None = _UNSET,
                  errors: Iterable[type[Exception]] | None = _UNSET,
                  redis_url: str | None = _UNSET) -> None:
        """Set, for every limiter of this process, what is given: the reschedule
        `backoff` `(limiter, job, exc) -> seconds` (None: the default), exception classes
        that count as over-limit inside a job (a client library's "429 Too Many
        Requests"), and a Redis URL of the limiters' own (None: the Config's)."""
        if backoff is not _UNSET:
            if backoff is not None and not callable(backoff):
                raise ValueError(f"backoff must be callable, got {backoff!r}")
            SETTINGS.backoff = backoff
        if errors is not _UNSET:
            errors = tuple(errors or ())
            bad = [e for e in errors if not (isinstance(e, type) and issubclass(e, Exception))]
            if bad:
                raise ValueError(f"errors must be exception classes, got {bad!r}")
            SETTINGS.errors = errors
            claim_errors(errors)
        if redis_url is not _UNSET and redis_url != SETTINGS.redis_url:
            if redis_url is not None and not isinstance(redis_url, str):
                raise ValueError(f"redis_url must be a URL string, got {redis_url!r}")
            SETTINGS.redis_url, SETTINGS._own = redis_url, None

    # --- calls ----------------------------------------------------------------------

    def within_limit(self, fn: Callable[_P, _R], *args: _P.args,
                     **kwargs: _P.kwargs) -> _R | None:
        """Run `fn(*args, **kwargs)` inside the limit and return its result; None when
        the call was skipped (`policy="ignore"`). Raises OverLimit when refused."""
        handle = self._enter(1)
        if handle is None:
            return None
        try:
            return fn(*args, **kwargs)
        finally:
            handle.release()

    def acquire(self, *, used: int | None = None, estimate: float | None = None) -> "Handle":
        """The context form: `with limiter.acquire() as handle:`. `used` charges a bucket
        or window call that many units; `estimate` is what a points call spends (settle
        it with `handle.points_used(actual)`). Needs `policy="raise"`."""
        if self.options["policy"] != "raise":
            raise ValueError(f"limiter {self.name!r}: the context form needs "
                             f"policy='raise' (a with-block cannot be skipped)")
        return Handle(self, self._cost(used, estimate))

    def _cost(self, used, estimate) -> float:
        if estimate is not None and self.type != "points":
            raise ValueError(f"estimate is for points limiters; {self.name!r} is {self.type}")
        if used is not None and self.type not in ("bucket", "window"):
            raise ValueError(f"used is for bucket and window limiters; {self.name!r} is "
                             f"{self.type}")
        cost = estimate if estimate is not None else used if used is not None else 1
        _positive("estimate" if estimate is not None else "used", cost,
                  whole=self.type != "points")
        limit = self._algorithm.limit
        if cost > limit:
            raise ValueError(f"a call costing {cost} can never fit limiter {self.name!r} "
                             f"(limit {limit})")
        return cost

    def _enter(self, cost) -> "Handle | None":
        handle = Handle(self, cost)
        return handle if handle.take() else None

    def _attempts(self, cost, slot: str):
        """Try until admitted or out of time (one round trip a try): the admitting
        Attempt, or None after the last refusal, with the overage booked."""
        algorithm = self._algorithm
        connection = SETTINGS.connection()
        started = time.monotonic()
        deadline = started + self.options.get("wait_timeout", 0)
        while True:
            commands = self._register_commands(connection)
            registering = bool(commands)
            commands.append(algorithm.attempt_command((time.monotonic() - started) * 1000,
                                                      cost, slot))
            replies = SCRIPTS.run(connection, commands)
            attempt = parse_attempt(replies[-1])
            if registering:
                self._registered(connection, new=replies[0] == 1)
            if isinstance(algorithm, Bucket):
                algorithm.learn_clock(attempt.now)
            if attempt.admitted:
                return attempt
            if attempt.wrong_bucket:
                continue
            left = deadline - time.monotonic()
            if left <= 0 or not algorithm.waits:
                self._book_overage(connection)
                return None
            wait = attempt.retry_in_s
            if isinstance(algorithm, Concurrent):
                wait = min(wait, CONCURRENT_POLL_S)
            time.sleep(min(max(wait, MIN_SLEEP_S), left))

    def _book_overage(self, connection) -> None:
        stats = self._algorithm.stats_key
        connection.write(connection.execute_batch, [
            ("HINCRBY", stats, "overages", 1), ("EXPIRE", stats, self.options["ttl"])])

    # --- registration ---------------------------------------------------------------

    def _meta_fields(self) -> tuple:
        if self._meta is None:
            shown = {k: ("<proc>" if callable(v) else v) for k, v in self.options.items()}
            options_json = json.dumps(shown, sort_keys=True, separators=(",", ":"))
            fingerprint = hashlib.sha256(
                f"{self.type}|{self.name}|{options_json}".encode()).hexdigest()
            self._meta = (options_json, fingerprint)
        return self._meta

    def _register_commands(self, connection) -> list:
        options_json, fingerprint = self._meta_fields()
        seen = SETTINGS.registered.get((connection.url, self.name, fingerprint))
        if seen is not None and time.monotonic() - seen < REGISTER_EVERY_S:
            return []
        return [SCRIPTS.command("limiter_register", (keys.limiter(self.name), keys.LIMITER_LIST),
                                (self.type, options_json, fingerprint, self.options["ttl"],
                                 self.name))]

    def _registered(self, connection, new: bool) -> None:
        registered = SETTINGS.registered
        if len(registered) >= REGISTERED_CAP:
            registered.clear()
        now = time.monotonic()
        registered[(connection.url, self.name, self._meta_fields()[1])] = now
        # A new name grew the list: now and then, the process that grows it trims it.
        if new and now - SETTINGS.swept_at > SWEEP_EVERY_S:
            SETTINGS.swept_at = now
            try:
                sweep_sample(connection)
            except REDIS_ERRORS as exc:
                logger.warning("Could not sweep the limiter list: %s", exc)

    # --- introspection --------------------------------------------------------------

    def size(self) -> float:
        """How much of the limit is in use now (slots, calls, level or points)."""
        return self.status()["used"]

    def status(self) -> dict:
        """`{"used", "limit", "reset_at", "available", "metrics"}` (reset_at: epoch s)."""
        return read_status(SETTINGS.connection(), self._algorithm)

    def reset(self) -> None:
        """Forget the limiter's state and counters (current holders lose their slots)."""
        connection = SETTINGS.connection()
        now = time.time()
        doomed = [*self._algorithm.state_keys(now), self._algorithm.stats_key]
        connection.write(connection.execute_batch, [("DEL", *doomed)])

    def delete(self) -> None:
        """Reset, then remove the meta and the name from the dashboard's list."""
        self.reset()
        connection = SETTINGS.connection()
        connection.write(connection.execute_batch, [
            ("DEL", keys.limiter(self.name)), ("SREM", keys.LIMITER_LIST, self.name)])
        SETTINGS.registered.pop((connection.url, self.name, self._meta_fields()[1]), None)

    def __repr__(self) -> str:
        return f"<Limiter {self.type} {self.name!r} limit={self._algorithm.limit}>"


class Handle:
    """One admitted call: `release()` ends it (a concurrent slot goes back), and a points
    call settles what it really cost with `points_used(actual)`."""

    def __init__(self, limiter: Limiter, cost: float) -> None:
        self.limiter = limiter
        self.cost = cost
        self.admitted_at: float | None = None  # Redis's time when the call was counted
        self._slot = slot_id()
        self._taken_at = 0.0
        self._actual = None

    def take(self) -> bool:
        attempt = self.limiter._attempts(self.cost, self._slot)
        if attempt is None:
            if self.limiter.options["policy"] == "ignore":
                return False
            raise OverLimit(f"{self.limiter.type} limiter {self.limiter.name!r} is over its "
                            f"limit", limiter=self.limiter)
        self.admitted_at = attempt.now
        self._taken_at = time.monotonic()
        return True

    def points_used(self, actual: float) -> None:
        """What the call really cost; the difference with the estimate is settled at exit."""
        if self.limiter.type != "points":
            raise ValueError(f"points_used is for points limiters; {self.limiter.name!r} "
                             f"is {self.limiter.type}")
        self._actual = _positive("points used", actual, whole=False, zero=True)

    def release(self) -> None:
        algorithm = self.limiter._algorithm
        command = None
        if isinstance(algorithm, Concurrent):
            command = algorithm.release_command(self._slot,
                                                (time.monotonic() - self._taken_at) * 1000)
        elif isinstance(algorithm, Points) and self._actual is not None \
                and self._actual != self.cost:
            command = algorithm.refund_command(self.cost - self._actual)
        if command is None:
            return
        try:
            SCRIPTS.run(SETTINGS.connection(), [command])
        except REDIS_ERRORS as exc:
            # The call itself is done: failing it now would run it again on retry. A slot
            # not given back frees itself when its lease (lock_timeout) ends.
            logger.warning("Could not release limiter %r (%s); its lease ends on its own",
                           self.limiter.name, exc)

    def __enter__(self) -> Self:
        self.take()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()


class Unlimited:
    """`Limiter.unlimited()`: the same calls as a Limiter, admitting everything."""

    name = "unlimited"
    type = "unlimited"

    def __init__(self) -> None:
        self.options = {"policy": "raise", "reschedule": DEFAULT_RESCHEDULE}

    def within_limit(self, fn: Callable[_P, _R], *args: _P.args, **kwargs: _P.kwargs) -> _R:
        return fn(*args, **kwargs)

    def acquire(self, *, used: int | None = None,
                estimate: float | None = None) -> "_UnlimitedHandle":
        return _UnlimitedHandle()

    def size(self) -> int:
        return 0

    def status(self) -> dict:
        return {"used": 0, "limit": None, "reset_at": None, "available": None, "metrics": {}}

    def reset(self) -> None:
        pass

    def delete(self) -> None:
        pass


class _UnlimitedHandle:
    admitted_at = None

    def points_used(self, actual: float) -> None:
        pass

    def release(self) -> None:
        pass

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        pass
