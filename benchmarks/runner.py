"""Runs a plan: every trial for every target, repeated, alternating the target order."""

import os
import platform
import subprocess
import time
from datetime import UTC, datetime

from . import measure
from .measure import Context
from .report import Progress, Results
from .targets import BenchError, Target

# Jobs per run at --scale 1: about 2-4 s of work each on the machine in docs/benchmarks.md.
BASE_JOBS = {"noop": 10_000, "io": 300, "cpu": 1_000}
WURK_ONLY = (measure.Boot, measure.Latency, measure.Paging)


def jobs_for(shape: str, threads: int, processes: int, scale: float) -> int:
    # io scales with threads (they overlap their sleeps); noop and cpu with processes.
    per_process = BASE_JOBS[shape] * (threads if shape == "io" else 1)
    return max(2, int(per_process * processes * scale))


def throughput_trials(shapes, threads, processes, scale) -> list:
    return [measure.Throughput(shape, t, p, jobs_for(shape, t, p, scale))
            for shape in shapes for p in processes for t in threads]


def applies(trial, target: Target) -> bool:
    if hasattr(trial, "applies"):
        return trial.applies(target)
    if target.system == "sidekiq":  # its probe pushes with Wurk's client: push rows would be Wurk's
        return isinstance(trial, measure.Throughput)
    return target.system == "wurk" or not isinstance(trial, WURK_ONLY)


def machine_info(redis_client) -> dict:
    model = ""
    try:
        with open("/proc/cpuinfo") as handle:
            model = next((line.split(":", 1)[1].strip() for line in handle
                          if line.startswith("model name")), "")
    except OSError:
        pass
    server = redis_client.info("server")
    return {"cpus": os.cpu_count(), "cpu_model": model, "platform": platform.platform(),
            "python": platform.python_version(), "redis": server.get("redis_version"),
            "load_average_start": os.getloadavg()}


def git_revision() -> str:
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


def run(targets: list[Target], trials: list, repeats: int, ctx: Context,
        progress_enabled: bool = True, once: tuple = (measure.Paging,)) -> Results:
    """Every trial for every target, `repeats` times; the order of targets flips each
    repeat, so drift on a shared machine hits each side alike. `once` trials run in the
    first repeat only (they repeat internally)."""
    steps = [(r, trial, target) for r in range(repeats) for trial in trials
             if r == 0 or not isinstance(trial, once)
             for target in (targets if r % 2 == 0 else targets[::-1]) if applies(trial, target)]
    results = Results([t.label for t in targets], {
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine_info(ctx.client), "git": git_revision(), "repeats": repeats})
    progress = Progress(len(steps), enabled=progress_enabled)
    ctx.on_progress = progress.jobs
    started = time.monotonic()
    for repeat, trial, target in steps:
        progress.step(f"{target.label}: {describe(trial)} (run {repeat + 1}/{repeats})")
        try:
            for sample in trial.run(ctx, target):
                results.add(target.label, repeat, sample)
        except (BenchError, OSError, ValueError) as exc:
            results.error(f"{target.label}: {describe(trial)}: {exc}")
    progress.finish()
    add_process_scaling(results)
    results.meta["seconds"] = round(time.monotonic() - started, 1)
    results.meta["machine"]["load_average_end"] = os.getloadavg()
    results.meta["targets"] = {t.label: {"settings": t.settings, **t.info} for t in targets}
    return results


def add_process_scaling(results: Results) -> None:
    """Rows `<shape>: 2 processes / 1`, paired within each repeat (1 thread each)."""
    for shape in BASE_JOBS:
        one = results.rows.get(f"{shape} jobs/s, 1 thread x 1 process")
        two = results.rows.get(f"{shape} jobs/s, 1 thread x 2 processes")
        if one is None or two is None:
            continue
        for label, runs in two.samples.items():
            for repeat, value in runs.items():
                base = one.samples.get(label, {}).get(repeat)
                if base:
                    results.add(label, repeat, measure.Sample(
                        f"{shape} scaling, 2 processes / 1 (1 thread each)", "x", value / base))


def describe(trial) -> str:
    return f"{type(trial).__name__.lower()} {getattr(trial, 'name', '')}".strip()
