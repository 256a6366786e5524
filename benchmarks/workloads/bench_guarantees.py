"""Wurk-only bench workloads for the `guarantees` section: what a unique push, an encrypted
push, an encrypted job's run and a reliable-push replay cost. Workers load it with
`--require bench_guarantees` beside bench_wurk (it turns encryption on with a fixed key).

    python -m bench_probe wurk guarantees calls N      the push and hook costs, one thread
    python -m bench_probe wurk guarantees fill SHAPE N push N jobs of a shape below
"""

import time

import bench_shapes as shapes
import redis

from wurk_django.core import Client, Config, encryption, wurk_task
from wurk_django.core.client import send
from wurk_django.core.features import JobRun, job_hooks_for, run_with_job_hooks
from wurk_django.core.payload import loads
from wurk_django.core.push_buffer import PushBuffer
from wurk_django.core.redis import connection_for

BENCH_KEY = b"\x07" * 32  # a fixed key: the bench measures, it protects nothing
WARM_UP = 100
SECRET = {"card": "4111111111111111", "holder": "A. Bench", "amount": 1999}
encryption.enable(1, {1: BENCH_KEY}.get)


@wurk_task(queue=shapes.QUEUE, encrypt=True)
def encrypted_noop(public, secret):
    shapes.noop()


@wurk_task(queue=shapes.QUEUE, unique_for=3600)
def unique_noop(n):
    shapes.noop()


@wurk_task(queue=shapes.QUEUE)
def plain_noop(public, secret):
    shapes.noop()


TASKS = {"encrypted_noop": encrypted_noop, "plain_noop": plain_noop}


def fill(shape: str, count: int) -> dict:
    started = time.perf_counter()
    TASKS[shape].perform_bulk([[n, SECRET] for n in range(count)])
    return {"seconds": time.perf_counter() - started}


def _writes(client) -> int:
    return client.info("stats")["total_writes_processed"]


def _timed(client, count: int, call) -> dict:
    """µs per call and Redis round trips per call (the INFO reads taken out)."""
    for n in range(WARM_UP):
        call(-1 - n)
    before = _writes(client)
    started = time.perf_counter()
    for n in range(count):
        call(n)
    elapsed = time.perf_counter() - started
    return {"us_per_call": elapsed / count * 1e6,
            "round_trips": (_writes(client) - before - 1) / count}


def _runs(count: int, raw: bytes, config, connection) -> float:
    """µs per job for decoding a fetched payload and running it through the features'
    job hooks around a perform that does nothing (what a worker adds to the job's own)."""
    started = time.perf_counter()
    for _ in range(count):
        job = loads(raw)
        hooks = job_hooks_for(job)
        if hooks:
            run_with_job_hooks(hooks, JobRun(job, raw, "default", None, config, connection),
                               lambda: None)
    return (time.perf_counter() - started) / count * 1e6


def calls(count: int) -> dict:
    client = redis.Redis.from_url(shapes.redis_url())
    config = Config(redis_url=shapes.redis_url())
    push = Client(config).push
    rows = {"ping": _timed(client, count, lambda n: client.ping()),
            "plain": _timed(client, count, lambda n: push(
                {"class": plain_noop, "args": [n, SECRET]})),
            "unique": _timed(client, count, lambda n: push(
                {"class": unique_noop, "args": [n]})),
            "duplicate": _timed(client, count, lambda n: push(
                {"class": unique_noop, "args": [0]})),
            "encrypted": _timed(client, count, lambda n: push(
                {"class": encrypted_noop, "args": [n, SECRET]}))}
    client.flushall()
    connection = connection_for(config)
    push({"class": encrypted_noop, "args": [0, SECRET]})
    push({"class": plain_noop, "args": [0, SECRET]})
    plain, sealed = client.lrange("queue:default", 0, 1)  # LPUSH: the newest first
    assert b"__wurk_enc__" in sealed and b"__wurk_enc__" not in plain
    rows["run_plain"] = _runs(count, plain, config, connection)
    rows["run_encrypted"] = _runs(count, sealed, config, connection)
    rows["replay_per_s"] = replay(client, config, connection, count)
    client.flushall()
    return rows


def replay(client, config, connection, count: int) -> float:
    """Jobs/s a reliable-push buffer full of pushes (1,000 at a time, as the default
    buffer holds) is delivered at once Redis is back."""
    pusher = Client(config)
    template = pusher.normalize({"class": plain_noop, "args": [0, SECRET]})
    total, elapsed = 0, 0.0
    while total < count:
        buffer = PushBuffer(connection, config, send, capacity=1000)
        jobs = [dict(template, jid=f"replay-{total + n}") for n in range(1000)]
        buffer._add(pusher._deliveries(jobs))
        started = time.perf_counter()
        assert buffer.drain()
        elapsed += time.perf_counter() - started
        total += 1000
        client.delete("queue:default")
    return total / elapsed


def probe(command: str, *args: str) -> dict:
    if command == "calls":
        return calls(int(args[0]))
    if command == "fill":
        return fill(args[0], int(args[1]))
    raise SystemExit(f"bench_guarantees: unknown command {command!r}")
