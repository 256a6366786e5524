"""Tasks and callback classes for the batch tests, loaded into real workers with --require.
Each records what happened in Redis lists and hashes the tests read."""

import json
import os
import time
from typing import ClassVar

from tests.core.jobs import results
from wurk_django.core import Batch, Job, wurk_task
from wurk_django.core.features import HOOKS, JobHandled, JobHook
from wurk_django.core.payload import dumps


def record(kind: str, value) -> None:
    results().rpush(f"test:{kind}", json.dumps(value))


def events(client, kind: str) -> list:
    return [json.loads(value) for value in client.lrange(f"test:{kind}", 0, -1)]


def _ran(job: Job) -> None:
    """Count a run: `test:runs` jid -> runs, `test:ran` "jid pid" per run, and the jid in
    `test:done:<bid>` (the jobs of a batch that have run)."""
    pipe = results().pipeline(transaction=False)
    pipe.hincrby("test:runs", job.jid, 1)
    pipe.rpush("test:ran", f"{job.jid} {os.getpid()}")
    if job.bid:
        pipe.sadd(f"test:done:{job.bid}", job.jid)
    pipe.execute()


class Work(Job):
    """Does nothing but count its run (and may sleep first, or wait for a gate)."""

    wurk_options: ClassVar[dict] = {"queue": "default", "retry": 5}

    def perform(self, sleep_ms=0, gate=None):
        if sleep_ms:
            time.sleep(sleep_ms / 1000)
        if gate:
            results().blpop(f"test:gate:{gate}", timeout=30)
        _ran(self)


def _soon(count, exc, job):
    return 1  # the tests move due retries forward themselves


class FailsTwice(Job):
    """Raises on its first two runs (per jid), then succeeds."""

    wurk_options: ClassVar[dict] = {"queue": "default", "retry": 5, "retry_in": _soon}

    def perform(self):
        attempt = results().hincrby("test:attempts", self.jid, 1)
        if attempt <= 2:
            raise ValueError(f"attempt {attempt} fails")
        _ran(self)


class AlwaysFails(Job):
    wurk_options: ClassVar[dict] = {"queue": "default", "retry": 0}

    def perform(self):
        results().hincrby("test:attempts", self.jid, 1)
        raise ValueError("always")


class FailsUntilAllowed(Job):
    """Dies at once until the test sets `test:allow`, then succeeds (a fixed bug)."""

    wurk_options: ClassVar[dict] = {"queue": "default", "retry": 0}

    def perform(self):
        if not results().get("test:allow"):
            raise ValueError("not allowed yet")
        _ran(self)


class AddsSibling(Job):
    """Reopens its own batch and adds one more Work job to it."""

    wurk_options: ClassVar[dict] = {"queue": "default"}

    def perform(self, sleep_ms=0):
        with self.batch:
            Work.perform_async(sleep_ms)
        record("siblings", [self.bid, self.valid_within_batch()])
        _ran(self)


class OpensChild(Job):
    """Opens a child batch of its own batch, with `count` Work jobs."""

    wurk_options: ClassVar[dict] = {"queue": "default"}

    def perform(self, count, description):
        with Batch(description=description, on_complete=Recorder,
                   on_success=Recorder) as child:
            for _ in range(count):
                Work.perform_async()
        record("children", [self.bid, child.bid])
        _ran(self)


class Checks(Job):
    """Records whether its batch is still valid, then counts its run."""

    wurk_options: ClassVar[dict] = {"queue": "default"}

    def perform(self):
        record("validity", [self.jid, self.valid_within_batch()])
        _ran(self)


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
                             "ran": int(results().scard(f"test:done:{status.bid}")),
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
    """A workflow job: records "label jid" when it runs (the order the test checks)."""

    wurk_options: ClassVar[dict] = {"queue": "default", "retry": 5}

    def perform(self, label, sleep_ms=0):
        if sleep_ms:
            time.sleep(sleep_ms / 1000)
        results().rpush("test:steps", f"{label} {self.jid}")
        _ran(self)


def _set_aside(run, proceed):
    """Another feature's job hook (a limiter rescheduling): sends a copy of the job back
    to its queue and settles this run without it running."""
    record("set_aside", run.job["jid"])
    copy = {key: value for key, value in run.job.items() if key != "set_aside"}
    results().lpush(f"queue:{run.queue}", dumps(copy))
    raise JobHandled()


HOOKS.add(JobHook("set_aside", 20, _set_aside))
