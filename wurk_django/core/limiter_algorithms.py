"""The five rate-limiting algorithms: each one's keys, its one-round-trip acquire command,
how long to wait after a refusal, and its status; plus the runner of their Lua scripts
and the process-wide settings (`Limiter.configure`) every limiter call reads.

Every step that decides is a Lua script reading Redis's clock (`TIME`), so processes on
many hosts share one limit and one clock. The scripts live in core/lua/limiter_*.lua.
"""

import hashlib
import math
import os
import threading
import time
from dataclasses import dataclass

from . import keys
from .config import get_default_config
from .errors import ScriptMissingError
from .redis import RedisConnection, connection_for, lua_source

UNITS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400}


@dataclass(frozen=True, slots=True)
class Attempt:
    """What one acquire attempt answered: admitted or not, Redis's time, and (refused)
    how long until a call could fit."""

    admitted: bool
    now: float
    retry_in_s: float = 0.0
    wrong_bucket: bool = False


class Scripts:
    """The limiter scripts, sent by SHA in raw command batches (one round trip for a
    batch) and sent whole once when Redis does not know them (restarted, flushed)."""

    def __init__(self):
        self._by_name: dict[str, str] = {}
        self._source: dict[str, str] = {}  # sha -> source

    def command(self, name: str, keys_: tuple, args: tuple) -> tuple:
        sha = self._by_name.get(name)
        if sha is None:
            source = lua_source(name)
            sha = hashlib.sha1(source.encode()).hexdigest()
            self._source[sha] = source
            self._by_name[name] = sha
        return ("EVALSHA", sha, len(keys_), *keys_, *args)

    def run(self, connection, commands: list[tuple]) -> list:
        try:
            return connection.write(connection.execute_batch, commands)
        except ScriptMissingError:
            # NOSCRIPT: Redis ran nothing of that script. EVAL loads it for the next calls.
            whole = [("EVAL", self._source[c[1]], *c[2:]) if c[0] == "EVALSHA" else c
                     for c in commands]
            return connection.write(connection.execute_batch, whole)


SCRIPTS = Scripts()


class Settings:
    """What `Limiter.configure()` sets for every limiter of the process."""

    def __init__(self):
        self.backoff = None
        self.errors: tuple = ()
        self.redis_url: str | None = None
        self._own: RedisConnection | None = None
        self._shared: tuple = (None, None)  # (config, connection)
        self._lock = threading.Lock()
        self.registered: dict[tuple, float] = {}
        self.swept_at = time.monotonic()  # the first sweep comes one period after start

    def connection(self) -> RedisConnection:
        if self.redis_url is not None:
            with self._lock:
                if self._own is None:
                    self._own = RedisConnection(self.redis_url)
                return self._own
        config = get_default_config()
        shared_config, connection = self._shared
        if shared_config is not config:
            connection = connection_for(config)
            self._shared = (config, connection)
        return connection


SETTINGS = Settings()


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def parse_attempt(reply) -> Attempt:
    code, now = int(reply[0]), float(_text(reply[1]))
    if code == 1:
        return Attempt(True, now)
    if code == -1:
        return Attempt(False, now, wrong_bucket=True)
    return Attempt(False, now, max(float(_text(reply[2])), 0.0))


def _number(value, default=0):
    """A stored counter as an int (or a float when it has a fraction); garbage is 0."""
    try:
        number = float(_text(value))
    except (TypeError, ValueError):
        return default
    if not math.isfinite(number):
        return default
    return int(number) if number.is_integer() else number


class Algorithm:
    """One limiter's algorithm: `name`, its `options` (checked by limiter.py) and keys."""

    type = ""
    limit_option = ""
    waits = True  # refused calls wait (up to wait_timeout) for room; points never do

    def __init__(self, name: str, options: dict):
        self.name = name
        self.options = options
        self.stats_key = keys.limiter_stats(name)

    @property
    def limit(self):
        return self.options.get(self.limit_option)

    @property
    def stats_ttl(self) -> int:
        return int(self.options.get("ttl") or 7_776_000)

    def attempt_command(self, waited_ms: float, cost: int, slot: str) -> tuple:
        raise NotImplementedError

    def state_keys(self, now: float) -> list[str]:
        raise NotImplementedError

    def status_reads(self, pipe, now: float) -> None:
        """Queue the reads `status_from` needs."""
        raise NotImplementedError

    def status_from(self, replies: list, now: float) -> dict:
        raise NotImplementedError

    def _status(self, used, now: float, reset_at: float | None) -> dict:
        limit = self.limit
        available = None if limit is None else max(limit - used, 0)
        if isinstance(available, float):
            available = math.floor(available)
        return {"used": used, "limit": limit, "reset_at": reset_at, "available": available}


class Concurrent(Algorithm):
    type = "concurrent"
    limit_option = "size"

    @property
    def slots_key(self) -> str:
        return keys.limiter_concurrent(self.name)

    def attempt_command(self, waited_ms, cost, slot):
        options = self.options
        return SCRIPTS.command("limiter_concurrent_acquire", (self.slots_key, self.stats_key),
                               (options["size"], options["lock_timeout"], slot,
                                self.stats_ttl, int(waited_ms)))

    def release_command(self, slot: str, held_ms: float) -> tuple:
        return SCRIPTS.command("limiter_concurrent_release", (self.slots_key, self.stats_key),
                               (slot, int(held_ms), self.stats_ttl))

    def state_keys(self, now):
        return [self.slots_key]

    def status_reads(self, pipe, now):
        pipe.zrangebyscore(self.slots_key, now, "+inf", withscores=True)

    def status_from(self, replies, now):
        leases = replies[0] or []
        used = len(leases)
        full = self.limit is not None and used >= self.limit
        return self._status(used, now, min(s for _, s in leases) if full and leases else None)


class Bucket(Algorithm):
    """`count` calls per interval; every bucket starts at a multiple of the interval."""

    type = "bucket"
    limit_option = "count"

    def __init__(self, name, options):
        super().__init__(name, options)
        self._offset_s = 0.0  # Redis's clock minus this host's, learnt from each reply

    @property
    def interval(self) -> int:
        return int(self.options["interval"])

    def epoch(self, now: float) -> int:
        return int(now // self.interval)

    def attempt_command(self, waited_ms, cost, slot):
        epoch = self.epoch(time.time() + self._offset_s)
        options = self.options
        return SCRIPTS.command("limiter_bucket",
                               (keys.limiter_bucket(self.name, epoch), self.stats_key),
                               (options["count"], cost, self.interval, epoch, int(waited_ms),
                                self.stats_ttl))

    def learn_clock(self, redis_now: float) -> None:
        self._offset_s = redis_now - time.time()

    def state_keys(self, now):
        epoch = self.epoch(now)
        return [keys.limiter_bucket(self.name, e) for e in (epoch - 1, epoch, epoch + 1)]

    def status_reads(self, pipe, now):
        pipe.get(keys.limiter_bucket(self.name, self.epoch(now)))

    def status_from(self, replies, now):
        return self._status(_number(replies[0]), now, (self.epoch(now) + 1) * self.interval)


class Window(Algorithm):
    """At most `count` calls in any sliding interval."""

    type = "window"
    limit_option = "count"

    @property
    def window_key(self) -> str:
        return keys.limiter_window(self.name)

    def attempt_command(self, waited_ms, cost, slot):
        options = self.options
        return SCRIPTS.command("limiter_window", (self.window_key, self.stats_key),
                               (options["count"], options["interval"], cost, slot,
                                int(waited_ms), self.stats_ttl))

    def state_keys(self, now):
        return [self.window_key]

    def status_reads(self, pipe, now):
        pipe.zrangebyscore(self.window_key, now - self.options["interval"], "+inf",
                           withscores=True)

    def status_from(self, replies, now):
        hits = replies[0] or []
        full = self.limit is not None and len(hits) >= self.limit
        reset_at = hits[0][1] + self.options["interval"] if full and hits else None
        return self._status(len(hits), now, reset_at)


class Leaky(Algorithm):
    """A bucket of `size` calls draining in `drain` seconds: bursts up to `size`, then
    `size / drain` calls per second."""

    type = "leaky"
    limit_option = "size"

    @property
    def level_key(self) -> str:
        return keys.limiter_leaky(self.name)

    @property
    def drain_per_s(self) -> float:
        return self.options["size"] / self.options["drain"]

    def attempt_command(self, waited_ms, cost, slot):
        return SCRIPTS.command("limiter_leaky", (self.level_key, self.stats_key),
                               (self.options["size"], repr(self.drain_per_s), int(waited_ms),
                                self.stats_ttl))

    def state_keys(self, now):
        return [self.level_key]

    def status_reads(self, pipe, now):
        pipe.hmget(self.level_key, "level", "last")

    def status_from(self, replies, now):
        level, last = (_number(value, None) for value in replies[0] or (None, None))
        if level is None or last is None:
            return self._status(0, now, None)
        level = max(level - max(now - last, 0) * self.drain_per_s, 0.0)
        size = self.options["size"]
        reset_at = now + (level - size + 1) / self.drain_per_s if level + 1 > size else None
        return self._status(round(level, 3), now, reset_at)


class Points(Algorithm):
    """`capacity` points refilled at `refill` per second; a call spends its estimate and
    is refused at once when the points are not there."""

    type = "points"
    limit_option = "capacity"
    waits = False

    @property
    def points_key(self) -> str:
        return keys.limiter_points(self.name)

    def attempt_command(self, waited_ms, cost, slot):
        options = self.options
        return SCRIPTS.command("limiter_points", (self.points_key, self.stats_key),
                               (options["capacity"], repr(float(options["refill"])), cost,
                                self.stats_ttl))

    def refund_command(self, delta: float) -> tuple:
        options = self.options
        return SCRIPTS.command("limiter_points_refund", (self.points_key,),
                               (options["capacity"], repr(float(options["refill"])),
                                repr(float(delta))))

    def state_keys(self, now):
        return [self.points_key]

    def status_reads(self, pipe, now):
        pipe.hmget(self.points_key, "points", "last")

    def status_from(self, replies, now):
        capacity, refill = self.options["capacity"], self.options["refill"]
        points, last = (_number(value, None) for value in replies[0] or (None, None))
        if points is None or last is None:
            return self._status(0, now, None)
        points = min(capacity, points + max(now - last, 0) * refill)
        used = round(capacity - points, 3)
        return self._status(used, now, now + used / refill if used > 0 else None)


ALGORITHMS = {cls.type: cls for cls in (Concurrent, Bucket, Window, Leaky, Points)}
METRIC_FIELDS = ("held", "held_time", "held_ms", "immediate", "waited", "wait_time", "wait_ms",
                 "overages", "reclaimed", "reschedules")


def read_status(connection, algorithm: Algorithm) -> dict:
    """`{"used", "limit", "reset_at", "available", "metrics"}`, read without registering
    the limiter or touching its state."""
    return read_statuses(connection, [algorithm])[0]


def read_statuses(connection, algorithms: list) -> list[dict]:
    """The status of each algorithm in two round trips: Redis's clock, then every read."""
    seconds, micros = connection.read(connection.client.time)
    now = seconds + micros / 1_000_000

    def reads():
        pipe = connection.pipeline()
        for algorithm in algorithms:
            algorithm.status_reads(pipe, now)  # one read each
            pipe.hgetall(algorithm.stats_key)
        return pipe.execute(raise_on_error=False)

    replies = connection.read(reads)
    statuses = []
    for index, algorithm in enumerate(algorithms):
        state, stats = replies[2 * index], replies[2 * index + 1]
        if isinstance(state, Exception):  # a key of another type: state unknown
            status = {"used": None, "limit": algorithm.limit, "reset_at": None,
                      "available": None}
        else:
            status = algorithm.status_from([state], now)
        if isinstance(stats, Exception):
            stats = {}
        stats = {_text(k): _number(v) for k, v in (stats or {}).items()}
        status["metrics"] = {name: stats.get(name, 0) for name in METRIC_FIELDS}
        statuses.append(status)
    return statuses


def sweep_command(names: list[str]) -> tuple:
    """Drop those of `names` whose meta expired from the dashboard's list."""
    return SCRIPTS.command("limiter_sweep", (keys.LIMITER_LIST, *map(keys.limiter, names)),
                           tuple(names))


def sweep_sample(connection, count: int = 200) -> int:
    """Sweep `count` names picked at random from the list: run now and then by processes
    that register limiters, so a list of interpolated names stays near its live size."""
    names = [_text(n) for n in connection.read(connection.client.srandmember,
                                                keys.LIMITER_LIST, count) or ()]
    if not names:
        return 0
    return int(SCRIPTS.run(connection, [sweep_command(names)])[0])


def slot_id() -> str:
    return os.urandom(8).hex()
