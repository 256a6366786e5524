"""The measurements: each trial is one run of one target against the private Redis.

Completions are read from the counter every job INCRs (`bench:done`), polled every
few milliseconds; nothing sleeps and then assumes the work is done.
"""

import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path

import redis

from .server import redis_costs
from .targets import BenchError, Target, Workers

DONE_KEY = "bench:done"
POLL_S = 0.002
RUN_TIMEOUT_S = 300.0
IDLE_BEFORE_RSS_S = 0.5
BOOT_THREADS = 10


@dataclass
class Sample:
    key: str  # the table row, e.g. "noop jobs/s, 10 threads x 1 process"
    unit: str
    value: float
    higher_is_better: bool = True
    details: dict = field(default_factory=dict)


@dataclass
class Context:
    """What every trial needs: the Redis under test, a folder for logs, a progress hook."""

    redis_url: str
    log_dir: Path
    on_progress: callable = lambda done, total: None
    client: redis.Redis = None

    def __post_init__(self):
        self.client = redis.Redis.from_url(self.redis_url)

    def log_path(self, target: Target, name: str) -> Path:
        return self.log_dir / f"{target.label}-{name}.log".replace(" ", "_").replace("/", "_")


class Counter:
    """Reads `bench:done`; counts its own reads, so they can be taken out of Redis's stats."""

    def __init__(self, client: redis.Redis):
        self.client = client
        self.reads = 0

    def read(self) -> int:
        self.reads += 1
        return int(self.client.get(DONE_KEY) or 0)

    def wait_for(self, goal: int, workers: Workers, on_progress=None,
                 interval_s: float = POLL_S) -> tuple[float, int]:
        """Poll until the counter reaches `goal`; return (monotonic time seen, value)."""
        deadline = time.monotonic() + RUN_TIMEOUT_S
        while True:
            value = self.read()
            now = time.monotonic()
            if value >= goal:
                return now, value
            if not workers.alive():
                raise BenchError(f"a worker exited at {value}/{goal} jobs:\n{workers.log_tail()}")
            if now > deadline:
                raise BenchError(f"stalled at {value}/{goal} jobs after {RUN_TIMEOUT_S:.0f} s:"
                                 f"\n{workers.log_tail()}")
            if on_progress is not None:
                on_progress(value, goal)
            time.sleep(interval_s)


def plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 'es' if word.endswith('s') else 's'}"


def drain(ctx: Context, workers: Workers, jobs: int) -> dict:
    """Time `workers` from their first completion to the `jobs`-th, then stop them: the
    jobs timed, the seconds, their RSS at the end and the Redis cost per job between."""
    counter = Counter(ctx.client)
    try:
        started, first = counter.wait_for(1, workers, interval_s=POLL_S / 2)
        before = ctx.client.info("all")
        counter.reads = 0
        ended, _ = counter.wait_for(jobs, workers, ctx.on_progress)
        after = ctx.client.info("all")
        rss = workers.rss_mib()
    finally:
        workers.stop()
    done = jobs - first
    return {"jobs": jobs, "timed_jobs": done, "seconds": ended - started,
            "worker_rss_mib": rss, **redis_costs(before, after, counter.reads, done)}


@dataclass
class Throughput:
    """Jobs/s from the first completion to the last, boot excluded (the queue is full first)."""

    shape: str
    threads: int
    processes: int
    jobs: int

    @property
    def name(self) -> str:
        return (f"{self.shape} jobs/s, {plural(self.threads, 'thread')} x "
                f"{plural(self.processes, 'process')}")

    def run(self, ctx: Context, target: Target) -> list[Sample]:
        jobs = min(self.jobs, target.max_jobs or self.jobs)
        ctx.client.flushall()
        target.probe(ctx.redis_url, "fill", self.shape, jobs)
        log = ctx.log_path(target, f"{self.shape}-{self.threads}t-{self.processes}p")
        details = drain(ctx, target.start(ctx.redis_url, self.threads, self.processes, log),
                        jobs)
        samples = [Sample(self.name, "jobs/s", details["timed_jobs"] / details["seconds"],
                          details=details)]
        if self.shape == "noop":  # the Redis cost of a job does not depend on its body
            where = self.name.split(", ", 1)[1]
            samples += [Sample(f"Redis commands per job, noop, {where}", "per job",
                               details["commands_per_job"], False),
                        Sample(f"Redis round trips per job, noop, {where}", "per job",
                               details["round_trips_per_job"], False)]
        return samples


@dataclass
class Boot:
    """Process start to the first job's completion, then RSS per worker process at idle."""

    name: str = "core CLI"
    argv: callable = None  # (target, threads, processes) -> argvs; None: the target's own
    extra_env: dict = field(default_factory=dict)
    cwd: str | None = None

    def run(self, ctx: Context, target: Target) -> list[Sample]:
        ctx.client.flushall()
        target.probe(ctx.redis_url, "fill", "noop", 1)
        counter = Counter(ctx.client)
        argvs = (self.argv or target.worker_argv)(target, BOOT_THREADS, 1)
        env = {**target.env(ctx.redis_url), **self.extra_env}
        started = time.monotonic()
        workers = Workers(argvs, env, self.cwd or target.cwd, ctx.log_path(target, "boot"))
        try:
            seen, _ = counter.wait_for(1, workers, interval_s=0.001)
            time.sleep(IDLE_BEFORE_RSS_S)  # idle: parked in its blocking fetch
            rss = workers.rss_mib()
        finally:
            workers.stop()
        return [Sample(f"boot to first job, {self.name}", "s", seen - started, False),
                Sample(f"idle RSS per worker process, {self.name}", "MiB", max(rss), False,
                       {"rss_mib": rss})]


@dataclass
class Latency:
    """Push->start of jobs pushed one at a time to an idle worker (10 threads)."""

    count: int
    gap_ms: float = 2.0

    def run(self, ctx: Context, target: Target) -> list[Sample]:
        ctx.client.flushall()
        target.probe(ctx.redis_url, "fill", "noop", 1)
        workers = target.start(ctx.redis_url, BOOT_THREADS, 1, ctx.log_path(target, "latency"))
        try:
            Counter(ctx.client).wait_for(1, workers)  # booted and fetching
            samples = target.probe(ctx.redis_url, "latency", self.count, self.gap_ms)["samples_s"]
        finally:
            workers.stop()
        cuts = statistics.quantiles(samples, n=100, method="inclusive")
        return [Sample(f"push->start latency p{p}, idle worker", "ms", cuts[p - 1] * 1000, False,
                       {"samples": len(samples)}) for p in (50, 95, 99)]


@dataclass
class Enqueue:
    """One client thread: the PING loop (the ceiling), perform_async, perform_bulk."""

    count: int

    def run(self, ctx: Context, target: Target) -> list[Sample]:
        ctx.client.flushall()
        reply = target.probe(ctx.redis_url, "enqueue", self.count)
        ctx.client.flushall()
        target.info.update(version=reply["version"], python=reply["python"],
                           cpu_body_ms=reply["cpu_body_ms"])
        samples = [Sample("PING loop from one thread (the ceiling)", "calls/s",
                          reply["ping_per_s"]),
                   Sample("single push from one thread", "jobs/s", reply["push_per_s"]),
                   Sample("single push / PING rate", "%",
                          100 * reply["push_per_s"] / reply["ping_per_s"])]
        if "bulk_per_s" in reply:
            samples.append(Sample("bulk push from one thread", "jobs/s", reply["bulk_per_s"]))
        for threads in (1, 10):
            if f"body_per_s_{threads}" in reply:  # a --vs revision may predate the row
                samples.append(Sample(
                    f"noop job body alone (its INCR, no job system), {plural(threads, 'thread')}",
                    "calls/s", reply[f"body_per_s_{threads}"]))
        return samples


@dataclass
class Paging:
    """Data API page time (RetrySet.page, as the dashboard calls it) on big sets."""

    sizes: tuple = (1_000, 100_000, 1_000_000)
    repeat: int = 30

    def run(self, ctx: Context, target: Target) -> list[Sample]:
        rows = target.probe(ctx.redis_url, "paging", self.repeat, *self.sizes)["rows"]
        samples = []
        for row in rows:
            for page, field_name in (("page 1", "first_ms"), ("last page", "last_ms")):
                samples.append(Sample(f"dashboard API page, {row['jobs']:,} jobs, {page}", "ms",
                                      row[field_name], False, {"fill_s": row["fill_s"]}))
        return samples
