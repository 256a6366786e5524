"""The Django-free worker command: `python -m wurk_django.core --require app.tasks ...`."""

import argparse
import importlib
import logging
import os
import sys
from typing import Any, cast

from . import runner
from .config import Config, ProcessOptions
from .cron import configured_entries
from .errors import ConfigurationError, WurkError
from .joblog import configure_logging
from .registry import CLI_IMPORT_HINT, REGISTRY
from .sizing import with_environment


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
    parser.add_argument("-p", "--processes", metavar="N|auto", default=None,
                        help="worker processes to fork, or 'auto': one per usable CPU "
                             "(default $WURK_COUNT, $SIDEKIQ_COUNT, else 1: no supervisor)")
    parser.add_argument("--max-memory-mb", type=float, default=None,
                        help="replace a worker process whose memory grows past this "
                             "(default $WURK_MAXMEM_MB, $SIDEKIQ_MAXMEM_MB)")
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
    parser.add_argument("--metrics-port", type=int, default=None,
                        help="serve this process's Prometheus metrics on this port (a "
                             "supervisor's children on the port plus their slot number)")
    parser.add_argument("--metrics-address", default="0.0.0.0",
                        help="address the metrics port listens on (default 0.0.0.0)")
    parser.add_argument("--health-port", type=int, default=None,
                        help="answer GET /live and GET /ready on this port (orchestrator "
                             "probes; a supervisor answers for all of its processes)")
    parser.add_argument("--health-address", default="0.0.0.0",
                        help="address the health port listens on (default 0.0.0.0)")
    parser.add_argument("-v", "--verbose", action="store_true", help="log at DEBUG")
    parser.add_argument("--log-level", choices=("debug", "info", "warning", "error"),
                        default=None, help="log level (default info; warning hides the "
                                           "per-job start/done lines)")
    parser.add_argument("--log-format", choices=("text", "json"), default="text")
    parser.add_argument("--logfile", help="write logs to this file instead of stdout")
    return parser


# argparse dest -> Config field; errors about a field name its flag.
FLAG_FIELDS = {
    "concurrency": "concurrency", "queue": "queues", "timeout": "shutdown_timeout_s",
    "label": "labels", "verbose": "verbose", "fetch": "fetch",
    "poll_interval": "poll_interval_average_s", "heartbeat_interval": "heartbeat_interval_s",
    "reaper_interval": "reaper_interval_s", "cron_tick": "cron_tick_s", "cron_tz": "cron_tz",
    "leader_ttl": "leader_ttl_s", "leader_renew": "leader_renew_s",
    "leader_retry": "leader_retry_s", "timestamp_format": "timestamp_format",
    "redis_url": "redis_url", "tag": "tag", "metrics_port": "metrics_port",
    "metrics_address": "metrics_address", "health_port": "health_port",
    "health_address": "health_address",
}
PROCESS_FLAGS = {"processes": "processes", "max_memory_mb": "max_memory_mb",
                 "log_format": "log_format"}


def config_from_args(args: argparse.Namespace) -> Config:
    options = {field: getattr(args, dest) for dest, field in FLAG_FIELDS.items()}
    options["queues"] = tuple(args.queue) or ("default",)
    options["labels"] = frozenset(args.label)
    for field in ("redis_url", "tag"):  # unset: the environment's or the folder's
        if not options[field]:
            del options[field]
    return Config(**options)


def process_options(args: argparse.Namespace) -> ProcessOptions:
    """The flags, else the environment (WURK_COUNT, SIDEKIQ_COUNT, WURK_MAXMEM_MB, ...)."""
    values: dict[str, Any] = {}
    labels: dict[str | None, str] = {}
    for dest, field in PROCESS_FLAGS.items():
        if getattr(args, dest) is not None:
            values[field], labels[field] = getattr(args, dest), "--" + dest.replace("_", "-")
    try:
        with_environment(values, labels)
        return ProcessOptions(**values)
    except ConfigurationError as exc:
        raise exc.renamed(str(labels.get(exc.field, exc.field))) from None


def flag_error(exc: ConfigurationError, args: argparse.Namespace) -> ConfigurationError:
    """The error told with the flag that set the field (or the variable, for the URL)."""
    flags = {field: "--" + dest.replace("_", "-")
             for dest, field in {**FLAG_FIELDS, **PROCESS_FLAGS}.items()}
    if exc.field == "redis_url" and not args.redis_url:
        return exc.renamed("$REDIS_URL")
    return exc.renamed(flags[exc.field]) if exc.field in flags else exc


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        process = process_options(args)
    except ConfigurationError as exc:  # told with its flag or variable already
        print(f"wurk: {exc}", file=sys.stderr)
        return 1
    level = logging.DEBUG if args.verbose else getattr(logging, (args.log_level or "info").upper())
    configure_logging(level, process.log_format, args.logfile)
    # Like `python -m`, let --require find modules in the working directory.
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    REGISTRY.import_hint = CLI_IMPORT_HINT
    try:
        for module in args.require:
            importlib.import_module(module)
        config = config_from_args(args)
        configured_entries(config)  # a bad loop fails here, before any process forks
        # ProcessOptions has made `processes` a count.
        return runner.serve(config, processes=cast(int, process.processes),
                            max_memory_mb=process.max_memory_mb,
                            sizing_note=process.sizing_note)
    except ConfigurationError as exc:
        print(f"wurk: {flag_error(exc, args)}", file=sys.stderr)
        return 1
    except (WurkError, ImportError) as exc:
        print(f"wurk: {exc}", file=sys.stderr)
        return 1
