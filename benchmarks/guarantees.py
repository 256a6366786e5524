"""The `guarantees` section (Wurk only): what unique jobs, argument encryption and reliable
push cost. A unique push against a single push (µs and round trips), an encrypted push,
an encrypted job's run (in the process, and noop jobs/s through a real worker), and how
fast a reliable-push buffer is replayed. Task modules: workloads/bench_guarantees.py.
"""

from dataclasses import dataclass

from .measure import Context, Sample, Throughput
from .targets import Target, WithTasks

PUSHES = (("plain", "single push (2 args)"), ("unique", "push with unique_for"),
          ("duplicate", "duplicate push with unique_for (dropped)"),
          ("encrypted", "encrypted push (encrypt=True, 2 args)"))


@dataclass
class GuaranteeCalls:
    """The pushes and the in-process run cost, one thread, `count` calls each."""

    count: int = 5_000

    def applies(self, target: Target) -> bool:
        return target.system == "wurk"

    def run(self, ctx: Context, target: Target) -> list[Sample]:
        ctx.client.flushall()
        rows = target.probe(ctx.redis_url, "guarantees", "calls", self.count)
        samples = [Sample("PING from one thread, per call", "µs", rows["ping"]["us_per_call"],
                          False)]
        for name, label in PUSHES:
            samples += [Sample(f"{label}, per push", "µs", rows[name]["us_per_call"], False),
                        Sample(f"{label}, Redis round trips per push", "per push",
                               rows[name]["round_trips"], False)]
        samples += [
            Sample("decode + job hooks of a plain job (perform does nothing)", "µs",
                   rows["run_plain"], False),
            Sample("decode + job hooks of an encrypted job (decrypt, restore)", "µs",
                   rows["run_encrypted"], False),
            Sample("reliable push: buffered pushes replayed after an outage", "jobs/s",
                   rows["replay_per_s"])]
        return samples


@dataclass
class EncryptedJobs:
    """noop jobs with two arguments, plain then encrypted, on one worker of `threads`
    threads: jobs/s of each and the µs per job decryption adds."""

    threads: int
    jobs: int

    def applies(self, target: Target) -> bool:
        return target.system == "wurk"

    def run(self, ctx: Context, target: Target) -> list[Sample]:
        tasks = WithTasks(target, "guarantees", "bench_guarantees")
        plain = Throughput("plain_noop", self.threads, 1, self.jobs).run(ctx, tasks)[0]
        sealed = Throughput("encrypted_noop", self.threads, 1, self.jobs).run(ctx, tasks)[0]
        where = f"{self.threads} threads x 1 process"
        return [Sample(f"encrypted noop jobs/s, {where}", "jobs/s", sealed.value,
                       details=sealed.details),
                Sample(f"encrypted / plain noop jobs/s, {where}", "%",
                       100 * sealed.value / plain.value),
                Sample(f"µs per job encryption adds in a worker, {where}", "µs",
                       1e6 / sealed.value - 1e6 / plain.value, False)]


def trials(scale: float) -> list:
    return [GuaranteeCalls(max(50, int(5_000 * scale))),
            EncryptedJobs(10, max(20, int(10_000 * scale)))]
