"""`manage.py wurk_worker`: run a worker process with the project's WURK setting."""

import logging
from typing import cast

from django.core.management.base import BaseCommand, CommandError
from django.db import connections

from wurk_django import conf
from wurk_django.core import runner
from wurk_django.core.config import set_default_config
from wurk_django.core.errors import WurkError
from wurk_django.core.joblog import configure_logging
from wurk_django.task_queues import serve_task_queues

LOG_LEVELS = {0: logging.WARNING, 1: logging.INFO, 2: logging.DEBUG, 3: logging.DEBUG}
# Flags that override a Config field; errors about the field then name the flag.
FLAG_FIELDS = {"concurrency": "concurrency", "timeout": "shutdown_timeout_s", "tag": "tag",
               "timestamp_format": "timestamp_format", "queue": "queues", "label": "labels",
               "metrics_port": "metrics_port", "metrics_address": "metrics_address",
               "health_port": "health_port", "health_address": "health_address"}
PROCESS_FLAGS = ("processes", "max_memory_mb", "log_format")  # WURK's keys otherwise


class Command(BaseCommand):
    help = "Run a Wurk worker: fetch jobs from Redis and run them until TERM or Ctrl-C."

    def add_arguments(self, parser):
        parser.add_argument("-c", "--concurrency", type=int, help="threads per process")
        parser.add_argument("-q", "--queue", action="append", metavar="NAME[,WEIGHT]",
                            help="a queue to work, optionally weighted; repeatable")
        parser.add_argument("-t", "--timeout", type=float,
                            help="seconds running jobs get to finish at shutdown")
        parser.add_argument("-g", "--tag", help="a tag shown beside this process")
        parser.add_argument("--label", action="append", help="a process label; repeatable")
        parser.add_argument("-p", "--processes", metavar="N|auto",
                            help="fork this many worker processes, or 'auto': one per usable "
                                 "CPU (default WURK['PROCESSES'], $WURK_COUNT, else 1)")
        parser.add_argument("--max-memory-mb", type=float,
                            help="gracefully replace a worker process that grows past this")
        parser.add_argument("--timestamp-format", choices=("ms", "float"),
                            help="job timestamps as integer ms (Sidekiq 8) or float seconds "
                                 "(Sidekiq 6/7); default WURK['TIMESTAMP_FORMAT'], ms")
        parser.add_argument("--metrics-port", type=int,
                            help="serve this process's Prometheus metrics on this port "
                                 "(default WURK['METRICS_PORT']; children: port + slot)")
        parser.add_argument("--metrics-address",
                            help="address the metrics port listens on (default 0.0.0.0)")
        parser.add_argument("--health-port", type=int,
                            help="answer GET /live and GET /ready on this port (default "
                                 "WURK['HEALTH_PORT']; a supervisor answers for all)")
        parser.add_argument("--health-address",
                            help="address the health port listens on (default 0.0.0.0)")
        parser.add_argument("--logfile", help="log to this file instead of stdout")
        parser.add_argument("--log-format", choices=("text", "json"),
                            help="log line format (default text, or WURK['LOG_FORMAT'])")

    def handle(self, *args, **options):
        flags = {flag: options[flag] for flag in FLAG_FIELDS if options[flag] is not None}
        if options["queue"]:
            flags["queue"] = tuple(options["queue"])
        if options["label"]:
            flags["label"] = frozenset(options["label"])
        try:
            process = conf.process_options(**{name: options[name] for name in PROCESS_FLAGS})
            config = conf.build_config(
                sources={FLAG_FIELDS[flag]: f"--{flag.replace('_', '-')}" for flag in flags},
                **{FLAG_FIELDS[flag]: value for flag, value in flags.items()})
        except WurkError as exc:
            raise CommandError(f"wurk_worker: {exc}") from None
        configure_logging(LOG_LEVELS.get(options["verbosity"], logging.INFO),
                          process.log_format, options["logfile"])
        config = serve_task_queues(config, explicit=bool(options["queue"]))
        set_default_config(config)
        try:
            # ProcessOptions has made `processes` a count.
            status = runner.serve(config, processes=cast(int, process.processes),
                                  max_memory_mb=process.max_memory_mb,
                                  sizing_note=process.sizing_note,
                                  before_fork=[connections.close_all])
        except WurkError as exc:
            raise CommandError(f"wurk_worker: {exc}") from None
        if status:
            raise CommandError(f"wurk_worker exited with status {status}")
