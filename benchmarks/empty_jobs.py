"""Wurk's own cost per job: a worker draining jobs that do nothing (no I/O at all).

The bench's noop job does one INCR through redis-py, which with ten threads costs more
than Wurk does. This script takes that call away: the queue is filled with empty jobs,
a worker is started as users start it, and over a window in mid-run it reads how far
the queue went down (LLEN) and how much CPU the worker process used (/proc/<pid>/stat).
A script, not a test: nothing here asserts a time.

    python benchmarks/empty_jobs.py                     # 10 threads, 3 runs
    python benchmarks/empty_jobs.py --threads 1 10 --repeat 5

It starts a private redis-server on a free port, so it touches nothing of yours.
"""

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import redis

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.server import PrivateRedis  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime + stime


def one_run(url: str, threads: int, jobs: int, warm_s: float, window_s: float) -> tuple:
    client = redis.Redis.from_url(url)
    client.flushall()
    env = {**os.environ, "REDIS_URL": url,
           "PYTHONPATH": os.pathsep.join([str(ROOT / "benchmarks" / "empty"), str(ROOT)])}
    subprocess.run([sys.executable, "-c", "import empty_job as e; "
                    f"e.empty.perform_bulk([[]] * {jobs})"], env=env, check=True)
    worker = subprocess.Popen(
        [sys.executable, "-m", "wurk_django.core", "--require", "empty_job", "-c",
         str(threads), "-q", "default", "--logfile", os.devnull], env=env)
    try:
        deadline = time.monotonic() + 30
        while client.llen("queue:default") == jobs:  # booted and fetching
            if time.monotonic() > deadline or worker.poll() is not None:
                raise RuntimeError("the worker did not start draining the queue")
            time.sleep(0.01)
        time.sleep(warm_s)
        left, cpu, started = client.llen("queue:default"), cpu_seconds(worker.pid), \
            time.monotonic()
        time.sleep(window_s)
        done = left - client.llen("queue:default")
        elapsed, used = time.monotonic() - started, cpu_seconds(worker.pid) - cpu
        if client.llen("queue:default") == 0:
            raise RuntimeError(f"the queue ran dry inside the window: give more than {jobs} jobs")
        return done / elapsed, used / done * 1e6
    finally:
        worker.terminate()
        worker.wait(30)
        client.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[10])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=120_000)
    parser.add_argument("--window", type=float, default=3.0, help="seconds measured")
    args = parser.parse_args()
    server = PrivateRedis().start()
    runs_text = f"{args.repeat} run{'' if args.repeat == 1 else 's'}"
    try:
        for threads in args.threads:
            runs = [one_run(server.url, threads, args.jobs, 0.5, args.window)
                    for _ in range(args.repeat)]
            rates, costs = [r[0] for r in runs], [r[1] for r in runs]
            print(f"empty jobs, {threads} thread{'' if threads == 1 else 's'} x 1 process: "
                  f"{statistics.median(rates):,.0f} jobs/s ({min(rates):,.0f}-{max(rates):,.0f}), "
                  f"{statistics.median(costs):.0f} us of worker CPU per job "
                  f"({min(costs):.0f}-{max(costs):.0f}); {runs_text}")
    finally:
        server.cleanup()


if __name__ == "__main__":
    main()
