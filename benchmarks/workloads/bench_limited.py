"""Wurk-only bench workloads for the `limiters` section: each rate limiter's cost per call,
noop jobs inside a limiter that is never hit, and a task limited to two at once in the
cluster. Workers load it with `--require bench_limited` beside bench_wurk.

    python -m bench_probe wurk limiters calls N       N calls of each limiter, one thread
    python -m bench_probe wurk limiters fill SHAPE N  push N jobs of a shape below
"""

import time

import bench_shapes as shapes
import redis

from wurk_django.core import wurk_task
from wurk_django.core.limiter import Limiter

CONCURRENCY_SLEEP_S = 0.05
WARM_UP = 100
# Limits no bench run can reach: every call is admitted at once.
NEVER_HIT = {
    "concurrent": lambda: Limiter.concurrent("bench-concurrent", 1_000_000),
    "bucket": lambda: Limiter.bucket("bench-bucket", 10**12, "second"),
    "window": lambda: Limiter.window("bench-window", 10**12, 1),
    "leaky": lambda: Limiter.leaky("bench-leaky", 10**12, 1),
    "points": lambda: Limiter.points("bench-points", 10**12, 10**12),
}
_job_limiter = None


@wurk_task(queue=shapes.QUEUE)
def limited():
    """The noop job inside a concurrent limiter that is never hit."""
    global _job_limiter
    if _job_limiter is None:
        _job_limiter = NEVER_HIT["concurrent"]()
    _job_limiter.within_limit(shapes.noop)


@wurk_task(queue=shapes.QUEUE, concurrency=2)
def two_at_a_time():
    time.sleep(CONCURRENCY_SLEEP_S)
    shapes.done()


TASKS = {"limited": limited, "two_at_a_time": two_at_a_time}


def _nothing() -> None:
    pass


def _costs(client) -> tuple[int, int]:
    commands = sum(stat["calls"] for stat in client.info("commandstats").values())
    return commands, client.info("stats")["total_writes_processed"]


def calls(count: int) -> dict:
    """Each limiter's within_limit (never hit) `count` times from one thread: time per
    call, and Redis commands and round trips per call (the INFO reads taken out)."""
    client = redis.Redis.from_url(shapes.redis_url())
    first, second = _costs(client), _costs(client)
    own = (second[0] - first[0], second[1] - first[1])  # what reading the counters costs
    rows = {}
    pings = time.perf_counter()
    for _ in range(count):
        client.ping()
    rows["ping"] = {"us_per_call": (time.perf_counter() - pings) / count * 1e6}
    for kind, build in NEVER_HIT.items():
        limiter = build()
        for _ in range(WARM_UP):  # registers it and loads its scripts
            limiter.within_limit(_nothing)
        before = _costs(client)
        started = time.perf_counter()
        for _ in range(count):
            limiter.within_limit(_nothing)
        elapsed = time.perf_counter() - started
        after = _costs(client)
        rows[kind] = {"us_per_call": elapsed / count * 1e6,
                      "commands": (after[0] - before[0] - own[0]) / count,
                      "round_trips": (after[1] - before[1] - own[1]) / count}
    client.flushall()
    return rows


def fill(shape: str, count: int) -> dict:
    started = time.perf_counter()
    TASKS[shape].perform_bulk([[]] * count)
    return {"seconds": time.perf_counter() - started}


def probe(command: str, *args: str) -> dict:
    if command == "calls":
        return calls(int(args[0]))
    if command == "fill":
        return fill(args[0], int(args[1]))
    raise SystemExit(__doc__)
