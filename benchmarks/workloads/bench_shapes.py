"""The job shapes every system runs (noop, io, cpu, latency) and their bookkeeping.

Every job ends with the same completion bookkeeping, one Redis INCR on `bench:done`,
which the bench polls; Wurk's jobs and every peer's pay exactly the same for it.
"""

import os
import time

import redis

DONE_KEY = "bench:done"
LATENCY_KEY = "bench:latency"
QUEUE = "default"
IO_SLEEP_S = 0.005
# Fixed, never calibrated at run time, so every run and every system does the same work
# (about 2 ms on the machine in docs/benchmarks.md; each run reports its own).
CPU_ROUNDS = 25_000
SHAPES = ("noop", "io", "cpu")

_client: redis.Redis | None = None


def redis_url() -> str:
    return os.environ["BENCH_REDIS_URL"]


def client() -> redis.Redis:
    # One pool per process: redis-py reopens its sockets after a fork by itself.
    global _client
    if _client is None:
        _client = redis.Redis.from_url(redis_url())
    return _client


def done() -> None:
    # INCR by name: redis-py's incr() sends INCRBY, which Wurk itself may use; the bench
    # takes exactly one INCR per job out of the Redis command counts.
    client().execute_command("INCR", DONE_KEY)


def spin(rounds: int = CPU_ROUNDS) -> int:
    total = 0
    for number in range(rounds):
        total = (total + number * number) % 1_000_003
    return total


def noop() -> None:
    done()


def io() -> None:
    time.sleep(IO_SLEEP_S)
    done()


def cpu() -> None:
    spin()
    done()


def latency(pushed_at: float) -> None:
    """Record push->start: CLOCK_MONOTONIC is one clock for every process on Linux."""
    started = time.monotonic()
    pipe = client().pipeline(transaction=False)
    pipe.rpush(LATENCY_KEY, repr(started - pushed_at))
    pipe.execute_command("INCR", DONE_KEY)
    pipe.execute()
