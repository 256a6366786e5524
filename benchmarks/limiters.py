"""The `limiters` section (Wurk only): what each rate limiter costs per call, what a job
inside a limiter that is never hit costs, and how fast a task limited to two at once in
the cluster drains. Task modules: benchmarks/workloads/bench_limited.py.
"""

import math
from dataclasses import dataclass

from .measure import Context, Sample, Throughput
from .targets import Target, WithTasks

KINDS = ("concurrent", "bucket", "window", "leaky", "points")
CONCURRENCY_JOB_S = 0.05  # bench_limited.two_at_a_time's sleep
CONCURRENCY = 2


def with_limited_tasks(target: Target) -> WithTasks:
    return WithTasks(target, "limiters", "bench_limited")


@dataclass
class LimiterCalls:
    """within_limit of each limiter, never hit, from one thread; the PING loop beside it."""

    count: int = 5_000

    def applies(self, target: Target) -> bool:
        return target.system == "wurk"

    def run(self, ctx: Context, target: Target) -> list[Sample]:
        ctx.client.flushall()
        rows = target.probe(ctx.redis_url, "limiters", "calls", self.count)
        samples = [Sample("PING from one thread, per call", "µs", rows["ping"]["us_per_call"],
                          False)]
        for kind in KINDS:
            row = rows[kind]
            where = f"{kind} limiter, within_limit never hit"
            samples += [Sample(f"{where}, per call", "µs", row["us_per_call"], False),
                        Sample(f"{where}, Redis round trips per call", "per call",
                               row["round_trips"], False),
                        Sample(f"{where}, Redis commands per call (inside its scripts "
                               f"too)", "per call", row["commands"], False)]
        return samples


@dataclass
class LimitedJobs:
    """noop jobs, then the same inside a concurrent limiter that is never hit, on one
    worker of `threads` threads: the jobs/s of each and what the limiter adds per job."""

    threads: int
    jobs: int

    def applies(self, target: Target) -> bool:
        return target.system == "wurk"

    def run(self, ctx: Context, target: Target) -> list[Sample]:
        plain = Throughput("noop", self.threads, 1, self.jobs).run(ctx, target)[0]
        limited = Throughput("limited", self.threads, 1, self.jobs).run(
            ctx, with_limited_tasks(target))[0]
        where = f"{self.threads} threads x 1 process"
        added = limited.details["round_trips_per_job"] - plain.details["round_trips_per_job"]
        return [Sample(f"noop jobs/s inside a concurrent limiter never hit, {where}", "jobs/s",
                       limited.value, details=limited.details),
                Sample(f"same / noop jobs/s without it, {where}", "%",
                       100 * limited.value / plain.value),
                Sample(f"Redis round trips the limiter adds per job, {where}", "per job",
                       added, False)]


@dataclass
class ConcurrencyDrain:
    """Jobs of 50 ms limited to two at once in the cluster, on 2 processes x 10 threads:
    the drain time against the ideal of two jobs always running."""

    jobs: int = 200

    def applies(self, target: Target) -> bool:
        return target.system == "wurk"

    def run(self, ctx: Context, target: Target) -> list[Sample]:
        run = Throughput("two_at_a_time", 10, 2, self.jobs).run(ctx, with_limited_tasks(target))
        details = run[0].details
        # Timed from the first completion to the last. With two always running, the jobs
        # end in rounds of two, one job's time apart: the first completion ends round one,
        # so the ideal window is the remaining rounds (not the remaining jobs / 2, which
        # counts half a job too many and let a drain at the ideal read as 0.99x).
        ideal = (math.ceil(details["jobs"] / CONCURRENCY) - 1) * CONCURRENCY_JOB_S
        return [Sample(f"task concurrency=2, {self.jobs} x 50 ms jobs on 2 processes x 10 "
                       f"threads: drain time / ideal", "x", details["seconds"] / ideal, False,
                       details)]


def trials(scale: float) -> list:
    return [LimiterCalls(max(50, int(5_000 * scale))),
            LimitedJobs(10, max(20, int(10_000 * scale))),
            ConcurrencyDrain(max(20, int(200 * scale)))]
