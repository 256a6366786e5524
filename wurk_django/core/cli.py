"""The Django-free worker command: `python -m wurk_django.core --require app.tasks ...`."""

import argparse
import importlib
import logging
import os
import sys

from .config import Config
from .cron import configured_entries
from .errors import ConfigurationError, WurkError
from .joblog import configure_logging
from .registry import CLI_IMPORT_HINT, REGISTRY
from . import runner


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m wurk_django.core",
        description="Run a Wurk worker without Django.")
    parser.add_argument("-r", "--require", action="append", default=[], metavar="MODULE",
                        help="import this module (it defines your tasks); repeatable")
    parser.add_argument("-u", "--redis-url", help="Redis URL (default: $REDIS_URL)")
    parser.add_argument("-c", "--concurrency", type=int, default=5, help="threads (default 5)")
    parser.add_argument("-q", "--queue", action="append", default=[], metavar="NAME[,WEIGHT]",
                        help="a queue to work, with an optional weight; repeatable")
    parser.add_argument("-t", "--timeout", type=float, default=25,
                        help="seconds to let running jobs finish at shutdown (default 25)")
    parser.add_argument("-g", "--tag", help="a tag shown beside this process in the UI")
    parser.add_argument("--label", action="append", default=[], help="a label; repeatable")
    parser.add_argument("--fetch", choices=("reliable", "basic"), default="reliable",
                        help="reliable (default: no job lost if the process dies) or basic "
                             "(Sidekiq OSS's BRPOP)")
    parser.add_argument("--poll-interval", type=float, default=None,
                        help="average seconds between scheduled/retry polls")
    parser.add_argument("--heartbeat-interval", type=float, default=10,
                        help="seconds between heartbeats (default 10)")
    parser.add_argument("--reaper-interval", type=float, default=60,
                        help="seconds between sweeps for jobs of dead processes (default 60)")
    parser.add_argument("-p", "--processes", type=int, default=1,
                        help="worker processes to fork (default 1: no supervisor)")
    parser.add_argument("--max-memory-mb", type=float, default=None,
                        help="replace a worker process whose memory grows past this")
    parser.add_argument("--cron-tick", type=float, default=60,
                        help="seconds between the leader's cron ticks (default 60)")
    parser.add_argument("--cron-tz", default="",
                        help="time zone of loops that name none (default UTC)")
    parser.add_argument("--leader-ttl", type=float, default=30,
                        help="seconds the leader lock lives without renewal (default 30)")
    parser.add_argument("--leader-renew", type=float, default=15,
                        help="seconds between the leader's renewals (default 15)")
    parser.add_argument("--leader-retry", type=float, default=60,
                        help="seconds between a follower's tries to lead (default 60)")
    parser.add_argument("--timestamp-format", choices=("ms", "float"), default="ms",
                        help="job timestamps as Sidekiq 8's integer milliseconds (default) "
                             "or as float seconds, for fleets with Sidekiq 6 or 7")
    parser.add_argument("-v", "--verbose", action="store_true", help="log at DEBUG")
    parser.add_argument("--log-level", choices=("debug", "info", "warning", "error"),
                        default=None, help="log level (default info; warning hides the "
                                           "per-job start/done lines)")
    parser.add_argument("--log-format", choices=("text", "json"), default="text")
    parser.add_argument("--logfile", help="write logs to this file instead of stdout")
    return parser


def config_from_args(args: argparse.Namespace) -> Config:
    options = dict(
        concurrency=args.concurrency,
        queues=tuple(args.queue) or ("default",),
        shutdown_timeout_s=args.timeout,
        labels=frozenset(args.label),
        verbose=args.verbose,
        fetch=args.fetch,
        poll_interval_average_s=args.poll_interval,
        heartbeat_interval_s=args.heartbeat_interval,
        reaper_interval_s=args.reaper_interval,
        cron_tick_s=args.cron_tick,
        cron_tz=args.cron_tz,
        leader_ttl_s=args.leader_ttl,
        leader_renew_s=args.leader_renew,
        leader_retry_s=args.leader_retry,
        timestamp_format=args.timestamp_format,
    )
    if args.redis_url:
        options["redis_url"] = args.redis_url
    if args.tag:
        options["tag"] = args.tag
    return Config(**options)


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    level = logging.DEBUG if args.verbose else getattr(logging, (args.log_level or "info").upper())
    configure_logging(level, args.log_format, args.logfile)
    # Like `python -m`, let --require find modules in the working directory.
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    REGISTRY.import_hint = CLI_IMPORT_HINT
    try:
        for module in args.require:
            importlib.import_module(module)
        config = config_from_args(args)
        configured_entries(config)  # a bad loop fails here, before any process forks
        return runner.serve(config, processes=args.processes, max_memory_mb=args.max_memory_mb)
    except (WurkError, ConfigurationError, ImportError) as exc:
        print(f"wurk: {exc}", file=sys.stderr)
        return 1
