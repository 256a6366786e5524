"""What batches cost (Wurk only, the working tree): `python -m benchmarks.batches`.

Rows, each the median of `--repeat` runs, on a private redis-server:

- perform_bulk of 100,000 noop jobs inside a batch block, and plainly, from one thread
  (jobs/s, and the batch's as a share of the plain rate);
- the per-job accounting a worker does for a batch job (the invalidation check, then the
  success script), timed in this process against Redis: µs and round trips per job;
- noop jobs drained by a worker (10 threads, 1 process), plain and in one batch;
- from the return of a batch's last job (its ack and the fire follow) to the start of the
  success callback, on an idle worker: p50/p95/p99;
- the batches list page (BatchSet.page, page 1 and the last page) with 10^3..10^6 batches
  in the index, and a batch's page (BatchSet.fetch) for a batch of 10^6 jobs with 10^5
  of them failing, beside one of 10 jobs.

Nothing here asserts a time; docs/benchmarks.md keeps the figures with their command.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import redis

from benchmarks.report import number
from benchmarks.runner import git_revision, machine_info
from benchmarks.server import PrivateRedis

ROOT = Path(__file__).resolve().parents[1]
WORKLOADS = ROOT / "benchmarks" / "workloads"
sys.path.insert(0, str(WORKLOADS))

PAGE = 25
FILL_CHUNK = 10_000
SECTIONS = ("bulk", "accounting", "drain", "latency", "pages", "big")


def median(values):
    return statistics.median(values)


class Bench:
    def __init__(self, url: str, repeat: int, log_dir: Path):
        self.url, self.repeat, self.log_dir = url, repeat, log_dir
        self.client = redis.Redis.from_url(url)
        os.environ["BENCH_REDIS_URL"] = os.environ["REDIS_URL"] = url
        from wurk_django.core import Config, set_default_config
        set_default_config(Config(redis_url=url))
        import bench_batches
        self.tasks = bench_batches
        self.rows: list[tuple[str, str, float]] = []

    def row(self, name: str, unit: str, value: float) -> None:
        self.rows.append((name, unit, value))
        print(f"{name}: {number(value, unit)} {unit}", file=sys.stderr)

    def writes(self) -> int:
        return int(self.client.info("stats")["total_writes_processed"])

    # --- client side ---------------------------------------------------------------

    def bulk(self, jobs: int) -> None:
        from wurk_django.core import Batch
        plain, batched = [], []
        for _ in range(self.repeat):
            for target, inside in ((plain, False), (batched, True)):
                self.client.flushall()
                started = time.perf_counter()
                if inside:
                    with Batch(description="bench"):
                        self.tasks.noop.perform_bulk([[]] * jobs)
                else:
                    self.tasks.noop.perform_bulk([[]] * jobs)
                target.append(jobs / (time.perf_counter() - started))
                assert self.client.llen("queue:default") == jobs
        self.row(f"perform_bulk of {jobs:,} jobs, plain", "jobs/s", median(plain))
        self.row(f"perform_bulk of {jobs:,} jobs inside a batch", "jobs/s", median(batched))
        self.row("perform_bulk inside a batch / plain", "%",
                 100 * median(batched) / median(plain))

    # --- worker side ---------------------------------------------------------------

    def accounting(self, jobs: int) -> None:
        """The batch job hook around a run that does nothing, as a worker calls it."""
        from wurk_django.core import Batch, Config
        from wurk_django.core.batch_server import around
        from wurk_django.core.features import JobRun
        from wurk_django.core.redis import connection_for
        config = Config(redis_url=self.url)
        connection = connection_for(config)
        per_job, trips = [], []
        for _ in range(self.repeat):
            self.client.flushall()
            with Batch() as batch:
                jids = self.tasks.noop.perform_bulk([[]] * jobs)
            runs = [JobRun({"jid": jid, "bid": batch.bid}, b"", "default", None, config,
                           connection) for jid in jids]
            before = self.writes()
            started = time.perf_counter()
            for run in runs:
                around(run, lambda: None)
            per_job.append((time.perf_counter() - started) / jobs * 1e6)
            trips.append((self.writes() - before) / jobs)
        self.row("batch accounting per job on the worker (invalidation check + success "
                 "script)", "µs", median(per_job))
        self.row("batch accounting, Redis round trips per job", "per job", median(trips))

    def worker(self, threads: int = 10) -> subprocess.Popen:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(WORKLOADS), str(ROOT)]),
                   PYTHONUNBUFFERED="1")
        with open(self.log_dir / "batches-worker.log", "ab") as log:  # the child keeps it
            return subprocess.Popen([sys.executable, "-m", "wurk_django.core", "--require",
                                     "bench_batches", "-c", str(threads), "-q", "default"],
                                    env=env, cwd=str(ROOT), stdout=log,
                                    stderr=subprocess.STDOUT)

    def wait_done(self, count: int, timeout_s: float = 600) -> float:
        deadline = time.monotonic() + timeout_s
        while int(self.client.get("bench:done") or 0) < count:
            if time.monotonic() > deadline:
                raise RuntimeError(f"only {self.client.get('bench:done')} of {count} done")
            time.sleep(0.002)
        return time.monotonic()

    def drain(self, jobs: int) -> None:
        from wurk_django.core import Batch
        plain, batched = [], []
        for _ in range(self.repeat):
            for target, inside in ((plain, False), (batched, True)):
                self.client.flushall()
                if inside:
                    with Batch():
                        self.tasks.noop.perform_bulk([[]] * jobs)
                else:
                    self.tasks.noop.perform_bulk([[]] * jobs)
                process = self.worker()
                try:
                    self.wait_done(1)
                    started = time.monotonic()
                    ended = self.wait_done(jobs)
                finally:
                    process.terminate()
                    process.wait(30)
                target.append((jobs - 1) / (ended - started))
        self.row(f"noop jobs/s drained, 10 threads x 1 process, {jobs:,} jobs, plain",
                 "jobs/s", median(plain))
        self.row("same, every job in one batch", "jobs/s", median(batched))
        self.row("batch drain / plain drain", "%", 100 * median(batched) / median(plain))

    def latency(self, batches: int) -> None:
        from wurk_django.core import Batch
        self.client.flushall()
        process = self.worker()
        samples = []
        try:
            self.tasks.noop.perform_async()
            self.wait_done(1)  # booted and fetching
            for _ in range(batches):
                with Batch(on_success=self.tasks.Fired):
                    self.tasks.last.perform_async()
                _, fired = self.client.blpop(self.tasks.FIRED_KEY, timeout=30)
                returned = float(self.client.get(self.tasks.RETURNED_KEY))
                samples.append((float(fired) - returned) * 1000)
                time.sleep(0.002)  # idle between batches, as the push->start row does
        finally:
            process.terminate()
            process.wait(30)
        cuts = statistics.quantiles(samples, n=100, method="inclusive")
        for p in (50, 95, 99):
            self.row(f"last job's return -> success callback start p{p}, idle worker", "ms",
                     cuts[p - 1])

    # --- the dashboard's reads ------------------------------------------------------

    def fill_index(self, size: int) -> None:
        self.client.flushall()
        now = time.time()
        for start in range(0, size, FILL_CHUNK):
            pipe = self.client.pipeline(transaction=False)
            for n in range(start, min(start + FILL_CHUNK, size)):
                bid = f"bench{n:09d}"
                pipe.zadd("batches", {bid: now - size + n})
                pipe.hset(f"b-{bid}", mapping={
                    "description": f"report {n}", "total": 10, "pending": 3, "failures": 1,
                    "created_at": repr(now - size + n), "callbacks": "[]", "tags": "[]"})
            pipe.execute()

    def timed_ms(self, call, repeat: int = 30) -> float:
        for _ in range(5):
            call()
        times = []
        for _ in range(repeat):
            started = time.perf_counter()
            call()
            times.append((time.perf_counter() - started) * 1000)
        return median(times)

    def pages(self, sizes) -> None:
        from wurk_django.core.api.batches import BatchSet
        batches = BatchSet()
        for size in sizes:
            self.fill_index(size)
            last = (size + PAGE - 1) // PAGE
            self.row(f"batches list page, {size:,} batches, page 1", "ms",
                     self.timed_ms(lambda: batches.page(1, PAGE)))
            self.row(f"batches list page, {size:,} batches, last page", "ms",
                     self.timed_ms(lambda last=last: batches.page(last, PAGE)))

    def big_batch(self, jobs: int) -> None:
        from wurk_django.core import Batch
        from wurk_django.core.api.batches import BatchSet
        self.client.flushall()
        with Batch(description="small") as small:
            self.tasks.noop.perform_bulk([[]] * 10)
        with Batch(description="big") as big:
            pass
        for start in range(0, jobs, FILL_CHUNK):
            members = [f"j{n:024d}" for n in range(start, min(start + FILL_CHUNK, jobs))]
            pipe = self.client.pipeline(transaction=False)
            pipe.sadd(f"b-{big.bid}-jids", *members)
            if start < jobs // 10:
                pipe.sadd(f"b-{big.bid}-failed", *members)
            pipe.execute()
        self.client.hset(f"b-{big.bid}", mapping={"total": jobs, "pending": jobs,
                                                   "failures": jobs // 10})
        batches = BatchSet()
        self.row("batch page, a batch of 10 jobs", "ms",
                 self.timed_ms(lambda: batches.fetch(small.bid)))
        self.row(f"batch page, a batch of {jobs:,} jobs ({jobs // 10:,} failing)", "ms",
                 self.timed_ms(lambda: batches.fetch(big.bid)))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.batches",
                                     description="What Wurk's batches cost.")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--bulk-jobs", type=int, default=100_000)
    parser.add_argument("--accounting-jobs", type=int, default=5_000)
    parser.add_argument("--drain-jobs", type=int, default=20_000)
    parser.add_argument("--latency-batches", type=int, default=200)
    parser.add_argument("--paging-sizes", nargs="+", type=int,
                        default=[1_000, 100_000, 1_000_000])
    parser.add_argument("--batch-jobs", type=int, default=1_000_000)
    parser.add_argument("--sections", default=",".join(SECTIONS))
    parser.add_argument("--json", metavar="FILE")
    parser.add_argument("--log-dir", default=None)
    args = parser.parse_args(argv)
    log_dir = Path(args.log_dir or os.environ.get("TMPDIR", "/tmp"))
    sections = args.sections.split(",")
    unknown = set(sections) - set(SECTIONS)
    if unknown:
        parser.error(f"unknown sections: {', '.join(sorted(unknown))} "
                     f"(known: {','.join(SECTIONS)})")
    server = PrivateRedis().start()
    try:
        bench = Bench(server.url, args.repeat, log_dir)
        machine = machine_info(bench.client)
        runs = {"bulk": lambda: bench.bulk(args.bulk_jobs),
                "accounting": lambda: bench.accounting(args.accounting_jobs),
                "drain": lambda: bench.drain(args.drain_jobs),
                "latency": lambda: bench.latency(args.latency_batches),
                "pages": lambda: bench.pages(args.paging_sizes),
                "big": lambda: bench.big_batch(args.batch_jobs)}
        for name in sections:
            runs[name]()
    finally:
        server.stop()
    print("\n| row | value |\n|---|---:|")
    for name, unit, value in bench.rows:
        print(f"| {name} | {number(value, unit)} {unit} |")
    start, end = machine["load_average_start"], os.getloadavg()
    print(f"\n{machine['cpus']} CPUs ({machine['cpu_model']}), Python {machine['python']}, "
          f"Redis {machine['redis']}; load average {start[0]:.2f} at the start, {end[0]:.2f} "
          f"at the end; {args.repeat} runs each; git {git_revision()}.")
    if args.json:
        Path(args.json).write_text(json.dumps(
            [{"row": name, "unit": unit, "value": value} for name, unit, value in bench.rows],
            indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
