"""The default command of each system, as a user first runs it: throughput per machine.

Rows: the default command alone; one copy per CPU, as people run a one-process system on
a bigger machine; and Wurk's `-p auto` (its supervisor, one process per usable CPU).
Each run also records the workers' resident memory, summed over the machine.
"""

import os
from dataclasses import dataclass

from .measure import Context, Sample, drain
from .targets import Target, Workers

BASE_JOBS = {"noop": 10_000, "io": 600, "cpu": 1_000}


def usable_cpus() -> int:
    return len(os.sched_getaffinity(0))


@dataclass
class DefaultCommand:
    """`copies` of the target's default command (or, `auto`, Wurk's -p auto once)."""

    shape: str
    copies: int = 1
    auto: bool = False
    scale: float = 1.0

    @property
    def name(self) -> str:
        if self.auto:
            return f"{self.shape} jobs/s, default command with -p auto"
        if self.copies == 1:
            return f"{self.shape} jobs/s, default command"
        return f"{self.shape} jobs/s, default command, one per CPU ({self.copies} copies)"

    def applies(self, target: Target) -> bool:
        return target.default_argv is not None and (not self.auto or target.system == "wurk")

    def argvs(self, target: Target) -> list[list[str]]:
        assert target.default_argv is not None  # applies() said so
        argv = target.default_argv(target)
        return [argv + ["-p", "auto"]] if self.auto else [argv] * self.copies

    def run(self, ctx: Context, target: Target) -> list[Sample]:
        processes = usable_cpus() if self.auto else self.copies
        jobs = max(2, int(BASE_JOBS[self.shape] * processes * self.scale))
        ctx.client.flushall()
        target.probe(ctx.redis_url, "fill", self.shape, jobs)
        log = ctx.log_path(target, f"default-{self.shape}-{'auto' if self.auto else self.copies}")
        workers = Workers(self.argvs(target), {**target.env(ctx.redis_url), **target.default_env},
                          target.cwd, log)
        details = drain(ctx, workers, jobs)
        rss = details["worker_rss_mib"]
        where = self.name.split(", ", 1)[1]
        return [Sample(self.name, "jobs/s", details["timed_jobs"] / details["seconds"],
                       details=details),
                Sample(f"worker RSS, all processes, {self.shape}, {where}", "MiB", sum(rss),
                       False, {"per_process_mib": rss})]


def trials(shapes, scale: float = 1.0) -> list[DefaultCommand]:
    cpus = usable_cpus()
    found = []
    for shape in shapes:
        found.append(DefaultCommand(shape, scale=scale))
        if cpus > 1:
            found.append(DefaultCommand(shape, copies=cpus, scale=scale))
        found.append(DefaultCommand(shape, auto=True, scale=scale))
    return found
