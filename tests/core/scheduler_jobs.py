"""For tests/core/test_reliable_scheduler.py: a client hook that makes each promotion of a
job carrying `slow_promote` take that many ms and note which process made it, so a test
can SIGKILL a worker in the middle of promoting."""

import os
import time

from tests.core import jobs  # noqa: F401  (Tally, the task the moved jobs run)
from tests.core.jobs import results
from wurk_django.core.features import HOOKS, PROMOTION, ClientHook


def _slow(job, client, origin):
    if origin == PROMOTION:
        results().set("test:promoter", os.getpid())
        time.sleep(job["slow_promote"] / 1000)
    return job


HOOKS.add(ClientHook("slow_promote", 5, _slow))
