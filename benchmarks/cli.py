"""`python -m benchmarks`: parse options, start Redis, run the plan, report."""

import argparse
import contextlib
import json
import shutil
import signal
import sys
import tempfile
from pathlib import Path

import redis

from . import defaults, guarantees, limiters, measure, peers, runner, sidekiq_peer
from .revisions import Worktrees
from .server import PrivateRedis
from .targets import BenchError, project_worker_argv, wurk_target

SECTIONS = ("throughput", "enqueue", "latency", "boot", "paging", "defaults", "limiters",
            "guarantees")
# On request: `defaults` (each system's default command), `limiters` (Wurk's rate limiters),
# `guarantees` (unique, encrypted and reliable pushes).
DEFAULT_SECTIONS = SECTIONS[:5]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--redis-url", help="use this Redis instead of a private one; it is "
                        "FLUSHED between runs, so it must start empty")
    parser.add_argument("--sections", default=",".join(DEFAULT_SECTIONS),
                        help=f"what to measure, comma-separated, of {','.join(SECTIONS)} "
                             f"(default {','.join(DEFAULT_SECTIONS)})")
    parser.add_argument("--shapes", nargs="+", default=["noop", "io", "cpu"],
                        choices=("noop", "io", "cpu"))
    parser.add_argument("--threads", nargs="+", type=int, default=[1, 10])
    parser.add_argument("--processes", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--repeat", type=int, default=3, help="runs of each measurement")
    parser.add_argument("--scale", type=float, default=1.0,
                        help="multiply the jobs per throughput run (0.01 for a smoke run)")
    parser.add_argument("--enqueue-jobs", type=int, default=5_000)
    parser.add_argument("--latency-jobs", type=int, default=300)
    parser.add_argument("--paging-sizes", nargs="+", type=int,
                        default=[1_000, 100_000, 1_000_000])
    parser.add_argument("--vs", nargs="+", metavar="REV",
                        help="pair git revisions run by run: `--vs A` compares the working "
                             "tree with A, `--vs A B` compares B with A")
    parser.add_argument("--peers", action="store_true",
                        help="also run Celery, RQ, Dramatiq and Huey (make bench-peers)")
    parser.add_argument("--sidekiq", action="store_true",
                        help="also run Ruby's Sidekiq (Debian's ruby-sidekiq) on the same jobs: "
                             "the throughput and defaults sections")
    parser.add_argument("--peers-python", default=peers.DEFAULT_PYTHON,
                        help=f"the interpreter that has the peers (default {peers.DEFAULT_PYTHON})")
    parser.add_argument("--project-settings", default="example_project.settings",
                        help="settings of the Django project whose `manage.py wurk_worker` "
                             "boot the boot section times (default example_project.settings)")
    parser.add_argument("--json", metavar="FILE", help="write machine-readable results here")
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    parser.add_argument("--no-progress", action="store_true")
    parser.add_argument("--log-dir", help="keep worker logs here (default: a temporary folder)")


def build_trials(args) -> list:
    sections = set(args.sections.split(","))
    unknown = sections - set(SECTIONS)
    if unknown:
        raise BenchError(f"unknown sections: {', '.join(sorted(unknown))}")
    trials = []
    if "enqueue" in sections:
        trials.append(measure.Enqueue(args.enqueue_jobs))
    if "latency" in sections:
        trials.append(measure.Latency(args.latency_jobs))
    if "boot" in sections:
        trials += [measure.Boot(), measure.Boot(
            name="example project (manage.py wurk_worker)", argv=project_worker_argv,
            extra_env={"DJANGO_SETTINGS_MODULE": args.project_settings})]
    if "throughput" in sections:
        trials += runner.throughput_trials(args.shapes, args.threads, args.processes, args.scale)
    if "paging" in sections:
        trials.append(measure.Paging(tuple(args.paging_sizes)))
    if "defaults" in sections:
        trials += defaults.trials(args.shapes, args.scale)
    if "limiters" in sections:
        trials += limiters.trials(args.scale)
    if "guarantees" in sections:
        trials += guarantees.trials(args.scale)
    return trials


def build_targets(args, worktrees: Worktrees | None) -> list:
    if args.vs:
        if len(args.vs) > 2:
            raise BenchError("--vs takes one or two revisions")
        revisions = args.vs if len(args.vs) == 2 else [args.vs[0], "."]
        targets = [worktrees.target(revision) for revision in revisions]
    else:
        targets = [wurk_target()]
    if args.peers:
        targets += peers.targets(args.peers_python)
    if args.sidekiq:
        targets.append(sidekiq_peer.target())
    return targets


def connect(args) -> tuple[str, PrivateRedis | None]:
    if not args.redis_url:
        server = PrivateRedis().start()
        return server.url, server
    client = redis.Redis.from_url(args.redis_url)
    if client.dbsize():
        raise BenchError(f"{args.redis_url} holds {client.dbsize()} keys; the bench flushes "
                         f"its Redis, so give it an empty one")
    return args.redis_url, None


@contextlib.contextmanager
def terminate_as_exit():
    """Turn SIGTERM (`timeout`, a CI cancel) into SystemExit, so the `finally` blocks stop
    workers, Redis and worktrees; the main thread only, where Python delivers signals."""
    def exit_now(number, frame):
        raise SystemExit(128 + number)
    previous = signal.signal(signal.SIGTERM, exit_now)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def execute(args, out=None) -> int:
    """Run what `args` asks for, print the table, write the JSON; 1 if a run failed."""
    with terminate_as_exit():
        return _execute(args, out or sys.stdout)


def _execute(args, out) -> int:
    log_dir = Path(args.log_dir or tempfile.mkdtemp(prefix="wurk-bench-logs-"))
    log_dir.mkdir(parents=True, exist_ok=True)
    worktrees = Worktrees(Path.cwd()) if args.vs else None
    server = None
    try:
        trials = build_trials(args)
        targets = build_targets(args, worktrees)
        url, server = connect(args)
        ctx = measure.Context(url, log_dir)
        results = runner.run(targets, trials, args.repeat, ctx, not args.no_progress)
    except BaseException:
        if not args.log_dir:  # refused before any run: the folder of our own is still empty
            with contextlib.suppress(OSError):
                log_dir.rmdir()
        raise
    finally:
        if server is not None:
            server.cleanup()
        if worktrees is not None:
            worktrees.close()
    print(results.table(markdown=args.markdown), file=out)
    print(notes(results), file=out)
    if args.json:
        Path(args.json).write_text(json.dumps(results.to_json(), indent=1))
    if results.errors:
        print(f"\n{len(results.errors)} run(s) failed (logs in {log_dir}):", file=out)
        for message in results.errors:
            print(f"- {message}", file=out)
        return 1
    if not args.log_dir:
        shutil.rmtree(log_dir, ignore_errors=True)
    return 0


def notes(results) -> str:
    meta = results.meta
    machine = meta["machine"]
    lines = [f"\n{machine['cpus']} CPUs ({machine['cpu_model']}), Python {machine['python']}, "
             f"Redis {machine['redis']}; load average {fmt_load(machine['load_average_start'])} "
             f"at the start, {fmt_load(machine['load_average_end'])} at the end; "
             f"{measure.plural(meta['repeats'], 'run')} each, {meta['seconds']:.0f} s; "
             f"git {meta['git']}.",
             "Cells: median (min-max); ratios: the median of per-run ratios against "
             f"{results.labels[0]}, runs paired within each repeat."]
    for label, target in meta["targets"].items():
        versions = ", ".join(f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v}"
                             for k, v in target.items() if k != "settings")
        lines.append(f"- {label}: {target['settings']}" + (f" ({versions})" if versions else ""))
    return "\n".join(lines)


def fmt_load(load) -> str:
    return "/".join(f"{value:.2f}" for value in load)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks",
                                     description="Benchmark Wurk (and its peers).")
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return execute(args)
    except BenchError as exc:
        print(f"wurk bench: {exc}", file=sys.stderr)
        return 2
