"""The job the fail-over tests run: it books each run in a ledger on a Redis that takes
no part in the fail-over (the suite's own server, $LEDGER_URL), with the run's pid and
its CLOCK_MONOTONIC time, one clock for every process on Linux."""

import os
import threading
import time

import redis

from wurk_django.core import wurk_task

LEDGER = "test:ledger"
_client = None
_lock = threading.Lock()


def ledger() -> redis.Redis:
    global _client
    with _lock:
        if _client is None:
            _client = redis.Redis.from_url(os.environ["LEDGER_URL"])
        return _client


@wurk_task(retry=False)
def book(seq):
    ledger().rpush(LEDGER, f"{seq} {os.getpid()} {time.monotonic()!r}")
