"""Tasks for the Ruby interop tests, named and optioned as the Ruby classes of
tests/compat/ruby/*.rb are; a worker running them reports through Redis lists."""

import json
import os

import redis

from wurk_django.core import Job

RAN = "compat:ran"
STARTED = "compat:started"
RELEASE = "compat:release"
HOLD_LIMIT_S = 60

_client = None


def results() -> redis.Redis:
    global _client
    if _client is None:
        _client = redis.Redis.from_url(os.environ["REDIS_URL"])
    return _client


class Charge(Job):
    """Shares its wire name with the Ruby class `Compat::Charge`."""

    wurk_options = {"name": "Compat::Charge", "queue": "compat"}

    def perform(self, *args):
        results().rpush(RAN, json.dumps({"class": "Compat::Charge", "jid": self.jid,
                                         "args": list(args)}))


class Record(Job):
    """Pushed from Ruby by its Python name, as a Rails app enqueues into a Python service."""

    wurk_options = {"queue": "compat"}

    def perform(self, *args):
        results().rpush(RAN, json.dumps({"class": "Record", "jid": self.jid,
                                         "args": list(args)}))


class FailingJob(Job):
    """Sidekiq's FailingJob of capture_goldens.rb, written in Python."""

    wurk_options = {"name": "FailingJob", "queue": "low", "retry": 5, "backtrace": True}

    def perform(self, card):
        raise ValueError(f"card declined: {card}")


class DoomedJob(Job):
    """capture_goldens.rb's DoomedJob: `retry: 0` sends it to the dead set at once."""

    wurk_options = {"name": "DoomedJob", "retry": 0}

    def perform(self, *args):
        raise RuntimeError("no retries for this one")


class Hold(Job):
    """Stays busy until the test pushes to RELEASE (or a minute passes)."""

    wurk_options = {"name": "Hold"}

    def perform(self, marker):
        results().rpush(STARTED, marker)
        results().blpop(RELEASE, HOLD_LIMIT_S)


class SlowRetry(Job):
    """Fails, and asks for its retry an hour later, so it stays in `retry` while read."""

    wurk_options = {"name": "SlowRetry", "retry": 5, "backtrace": True}

    @classmethod
    def retry_in(cls, count, exc, job):
        return 3600

    def perform(self, card):
        raise ValueError(f"card declined: {card}")
