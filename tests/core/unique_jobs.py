"""Unique tasks for tests/core/test_unique*.py, run by real worker processes (--require).
Each records its runs in Redis lists the tests read: `test:ran` holds "<marker> <jid>"."""

import os

from tests.core.jobs import results
from wurk_django.core import Job


def _ran(marker, jid) -> None:
    results().rpush("test:ran", f"{marker} {jid}")


class UniqueRecord(Job):
    wurk_options = {"unique_for": 60}

    def perform(self, marker):
        _ran(marker, self.jid)


class FailsOnce(Job):
    """Fails its first attempt (the retry keeps the lock), succeeds on the retry."""

    wurk_options = {"unique_for": 120, "retry": 3}

    def perform(self, marker):
        if results().incr(f"test:attempts:{marker}") == 1:
            raise ValueError("first attempt fails")
        _ran(marker, self.jid)


class DiesAtOnce(Job):
    wurk_options = {"unique_for": 600, "retry": 0}

    def perform(self, marker):
        raise ValueError("this job dies")


class GatedStart(Job):
    """Waits for the test to open its gate; its lock goes when it starts."""

    wurk_options = {"unique_for": 600, "unique_until": "start"}

    def perform(self, marker):
        results().rpush("test:started", f"{marker} {self.jid}")
        results().blpop(f"test:gate:{marker}", timeout=30)
        _ran(marker, self.jid)


class GatedSuccess(GatedStart):
    wurk_options = {"unique_for": 600, "unique_until": "success"}


class HangsFirstTime(Job):
    """The first attempt hangs (its worker is SIGKILLed); the reclaimed one returns."""

    wurk_options = {"unique_for": 30}

    def perform(self, marker):
        attempt = results().incr(f"test:attempts:{marker}")
        results().rpush("test:started", f"{marker} {self.jid} {os.getpid()}")
        if attempt == 1:
            results().blpop("test:never", timeout=60)
        _ran(marker, self.jid)


class ByAccount(Job):
    """Unique by its first argument only: the rest may differ between duplicates."""

    wurk_options = {"unique_for": 60, "queue": "accounts"}

    @classmethod
    def unique_context(cls, job):
        return [job["class"], job["args"][:1]]

    def perform(self, account_id, note):
        _ran(note, self.jid)
