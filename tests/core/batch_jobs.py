"""Tasks and callback classes for the batch tests, loaded into real workers with --require.
Each records what happened in Redis lists and hashes the tests read."""

import json
import os
import time

from tests.core.jobs import results
from wurk_django.core import Batch, Job, wurk_task


def record(kind: str, value) -> None:
    results().rpush(f"test:{kind}", json.dumps(value))


def events(client, kind: str) -> list:
    return [json.loads(value) for value in client.lrange(f"test:{kind}", 0, -1)]


def _ran(jid: str) -> None:
    """Count a run: `test:runs` jid -> runs, `test:ran` "jid pid" per run."""
    pipe = results().pipeline(transaction=False)
    pipe.hincrby("test:runs", jid, 1)
    pipe.rpush("test:ran", f"{jid} {os.getpid()}")
    pipe.execute()


class Work(Job):
    """Does nothing but count its run (and may sleep first, or wait for a gate)."""

    wurk_options = {"queue": "default", "retry": 5}

    def perform(self, sleep_ms=0, gate=None):
        if sleep_ms:
            time.sleep(sleep_ms / 1000)
        if gate:
            results().blpop(f"test:gate:{gate}", timeout=30)
        _ran(self.jid)


def _soon(count, exc, job):
    return 1  # the tests move due retries forward themselves


class FailsTwice(Job):
    """Raises on its first two runs (per jid), then succeeds."""

    wurk_options = {"queue": "default", "retry": 5, "retry_in": _soon}

    def perform(self):
        attempt = results().hincrby("test:attempts", self.jid, 1)
        if attempt <= 2:
            raise ValueError(f"attempt {attempt} fails")
        _ran(self.jid)


class AlwaysFails(Job):
    wurk_options = {"queue": "default", "retry": 0}

    def perform(self):
        results().hincrby("test:attempts", self.jid, 1)
        raise ValueError("always")


class FailsUntilAllowed(Job):
    """Dies at once until the test sets `test:allow`, then succeeds (a fixed bug)."""

    wurk_options = {"queue": "default", "retry": 0}

    def perform(self):
        if not results().get("test:allow"):
            raise ValueError("not allowed yet")
        _ran(self.jid)


class AddsSibling(Job):
    """Reopens its own batch and adds one more Work job to it."""

    wurk_options = {"queue": "default"}

    def perform(self, sleep_ms=0):
        with self.batch:
            Work.perform_async(sleep_ms)
        record("siblings", [self.bid, self.valid_within_batch()])
        _ran(self.jid)


class OpensChild(Job):
    """Opens a child batch of its own batch, with `count` Work jobs."""

    wurk_options = {"queue": "default"}

    def perform(self, count, description):
        with Batch(description=description, on_complete=Recorder,
                   on_success=Recorder) as child:
            for _ in range(count):
                Work.perform_async()
        record("children", [self.bid, child.bid])
        _ran(self.jid)


class Checks(Job):
    """Records whether its batch is still valid, then counts its run."""

    wurk_options = {"queue": "default"}

    def perform(self):
        record("validity", [self.jid, self.valid_within_batch()])
        _ran(self.jid)


@wurk_task
def function_sibling(value):
    """A function task adding a sibling through Batch.current()."""
    batch = Batch.current()
    if batch is not None:
        with batch:
            Work.perform_async()
    record("function", [value, batch.bid if batch else None])


class Recorder:
    """A callback class: records every event it is called for, with the worker's pid."""

    def _record(self, event, status, options):
        record("callbacks", {"event": event, "bid": status.bid, "options": options,
                             "total": status.total, "pending": status.pending,
                             "failures": status.failures, "pid": os.getpid(),
                             "ran": int(results().hlen("test:runs")),
                             "at": time.time()})

    def on_complete(self, status, options):
        self._record("complete", status, options)

    def on_success(self, status, options):
        self._record("success", status, options)

    def on_death(self, status, options):
        self._record("death", status, options)

    def named(self, status, options):
        self._record("named", status, options)


class SlowRecorder(Recorder):
    """Records its start, waits for the test's gate, then records the event."""

    def on_success(self, status, options):
        record("callback_started", [status.bid, os.getpid()])
        results().blpop("test:gate:callback", timeout=30)
        self._record("success", status, options)


class BrokenCallback:
    def on_success(self, status, options):
        raise RuntimeError("callback body fails")


class Step(Job):
    """A workflow job: records its label when it runs (the order the test checks)."""

    wurk_options = {"queue": "default", "retry": 5}

    def perform(self, label, sleep_ms=0):
        if sleep_ms:
            time.sleep(sleep_ms / 1000)
        results().rpush("test:steps", label)
        _ran(self.jid)
