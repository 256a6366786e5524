"""Jobs for the multi-host test, required only by its workers: the test process never
imports this module, so its cron loop is registered by no other test."""

import os
import socket
import time

from tests.core.jobs import results
from wurk_django.core import Job, wurk_task

RAN = "test:ran"
CRON_QUEUE = "multi-host-cron"  # no worker serves it: its list counts the loop's fires


class HostTally(Job):
    """Records each run as "jid hostname pid" in `test:ran`, after its work, as a real
    side effect would: a run that finished but was never acknowledged shows up twice."""

    wurk_options = {"queue": "default"}

    def perform(self, work_ms=0):
        time.sleep(work_ms / 1000)
        results().rpush(RAN, f"{self.jid} {socket.gethostname()} {os.getpid()}")


@wurk_task(queue=CRON_QUEUE, cron="* * * * * *")
def every_second():
    """Fired every second by whichever process leads."""
