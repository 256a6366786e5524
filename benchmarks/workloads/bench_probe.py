"""The client side of a bench run, in a process of the system under test.

    python -m bench_probe SYSTEM fill SHAPE N      push N jobs before a worker starts
    python -m bench_probe SYSTEM enqueue N         PING loop, then N single pushes, bulk
    python -m bench_probe SYSTEM latency N GAP_MS  push one job at a time to an idle worker
    python -m bench_probe wurk paging REPEAT SIZE...
    python -m bench_probe wurk limiters calls N | fill SHAPE N   (bench_limited.py)
    python -m bench_probe wurk guarantees calls N | fill SHAPE N (bench_guarantees.py)

Prints one JSON object on its last line. Runs `bench_<SYSTEM>` from this directory, so
the revision or peer on PYTHONPATH is the one measured.
"""

import importlib
import json
import statistics
import sys
import threading
import time
from functools import partial

import bench_shapes as shapes
import redis

BULK_FACTOR = 10  # a bulk push is timed on 10x the single pushes: it is that much faster
WARM_UP = 100
BODY_THREADS = (1, 10)  # the noop rows' thread counts


def rate(count: int, run) -> float:
    started = time.perf_counter()
    run(count)
    return count / (time.perf_counter() - started)


def fill(app, shape: str, count: str) -> dict:
    count = int(count)
    started = time.perf_counter()
    if hasattr(app, "push_many"):
        app.push_many(shape, count)
    else:
        for _ in range(count):
            app.push_one(shape)
    return {"seconds": time.perf_counter() - started}


def enqueue(app, count: str) -> dict:
    """One thread: the PING ceiling, then one push per call, then the bulk API if any."""
    count = int(count)
    client = redis.Redis.from_url(shapes.redis_url())

    def pings(n):
        for _ in range(n):
            client.ping()

    def singles(n):
        for _ in range(n):
            app.push_one("noop")

    pings(WARM_UP)
    singles(WARM_UP)
    result = {"ping_per_s": rate(count, pings), "push_per_s": rate(count, singles),
              "cpu_body_ms": cpu_body_ms(), "version": app.version(),
              "python": sys.version.split()[0]}
    if hasattr(app, "push_many"):
        app.push_many("noop", WARM_UP)
        result["bulk_per_s"] = rate(count * BULK_FACTOR, lambda n: app.push_many("noop", n))
    for threads in BODY_THREADS:
        result[f"body_per_s_{threads}"] = rate(count, partial(bodies, threads))
    return result



def bodies(threads: int, count: int) -> None:
    """The noop job's body (its bookkeeping INCR) called in a loop from `threads` threads,
    with no job system around it: the ceiling for the noop throughput rows."""
    def loop(n):
        for _ in range(n):
            shapes.noop()
    workers = [threading.Thread(target=loop, args=(count // threads + (i < count % threads),))
               for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()


def cpu_body_ms() -> float:
    """The median time of the cpu shape's loop in this interpreter (no Redis)."""
    samples = []
    for _ in range(15):
        started = time.perf_counter()
        shapes.spin()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples) * 1000


def latency(app, count: str, gap_ms: str) -> dict:
    """Push, wait for the job to report its start (BLPOP, no polling), idle, repeat."""
    client = redis.Redis.from_url(shapes.redis_url())
    samples = []
    for _ in range(int(count)):
        time.sleep(float(gap_ms) / 1000)  # the worker is idle again, parked in its fetch
        app.push_one("latency", time.monotonic())
        reply = client.blpop([shapes.LATENCY_KEY], timeout=10)
        if reply is None:
            raise SystemExit("bench_probe: no latency sample within 10 s; is the worker up?")
        samples.append(float(reply[1]))
    return {"samples_s": samples}


def paging(app, repeat: str, *sizes: str) -> dict:
    import bench_paging
    client = redis.Redis.from_url(shapes.redis_url())
    return {"rows": bench_paging.measure(client, [int(s) for s in sizes], int(repeat))}


def limiters(app, *args: str) -> dict:
    import bench_limited  # Wurk only: the rate limiters and task concurrency
    return bench_limited.probe(*args)


def guarantees(app, *args: str) -> dict:
    import bench_guarantees  # Wurk only: unique, encrypted and reliable pushes
    return bench_guarantees.probe(*args)


COMMANDS = {"fill": fill, "enqueue": enqueue, "latency": latency, "paging": paging,
            "limiters": limiters, "guarantees": guarantees}


def main(argv: list[str]) -> None:
    if len(argv) < 2 or argv[1] not in COMMANDS:
        raise SystemExit(__doc__)
    system, command, *args = argv
    app = importlib.import_module(f"bench_{system}")
    app.setup()
    print(json.dumps(COMMANDS[command](app, *args)))


if __name__ == "__main__":
    main(sys.argv[1:])
