"""Expiring tasks for tests/core/test_expiry.py, run by real worker processes."""

from datetime import timedelta

from tests.core.jobs import results
from wurk_django.core import Job, wurk_task


class Digest(Job):
    wurk_options = {"expires_in": timedelta(seconds=1)}

    def perform(self, marker):
        results().rpush("test:ran", f"{marker} {self.jid}")


@wurk_task(expires_in=3600)
def hourly(marker):
    results().rpush("test:ran", f"{marker} hourly")
