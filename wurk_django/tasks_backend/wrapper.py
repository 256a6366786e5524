"""The Wurk job that runs django.tasks tasks on a worker and records each attempt."""

from typing import cast

from ..core.errors import ConfigurationError, Shutdown
from ..core.identity import process_identity
from ..core.payload import dumps
from ..core.retry import base_delay
from ..core.task import Job
from . import results
from .backend import WIRE_NAME, WurkBackend
from .compat import (
    InvalidTaskBackend,
    TaskContext,
    normalize_json,
    task_backends,
    task_finished,
    task_started,
    tasks_setting_given,
)


def retry_window_s(count: int) -> int:
    """The longest a retry booked after failure `count` waits: backoff plus the top of
    Sidekiq's jitter, `10 * (count + 1)` s, so the result outlives the wait for the retry."""
    return base_delay(count) + 10 * (count + 1)


def wurk_backend(alias: str):
    """The worker's own TASKS[alias], which must be a WurkBackend as where it was enqueued.

    A worker started with other settings (often a worker-only module without TASKS, so
    Django's default ImmediateBackend) cannot record results: say so, and let the job
    go through its retries so a worker with the right settings can still run it.
    """
    fix = ("start the worker with the TASKS setting of the project that enqueued it "
           "(BACKEND wurk_django.tasks_backend.WurkBackend)")
    try:
        backend = task_backends[alias]
    except InvalidTaskBackend:
        raise ConfigurationError(f"this django.tasks job names TASKS[{alias!r}], which this "
                                 f"worker's settings do not define: {fix}") from None
    if isinstance(backend, WurkBackend):
        return backend
    kind = type(backend)
    found = f"{kind.__module__}.{kind.__qualname__}"
    if not tasks_setting_given():
        found += " (Django's default: this worker's settings define no TASKS)"
    raise ConfigurationError(f"this django.tasks job was enqueued through a WurkBackend, but "
                             f"this worker's TASKS[{alias!r}] is {found}: {fix}")


class TaskRun:
    """One attempt of one task: resolves the task and its backend from the envelope."""

    def __init__(self, jid: str, envelope: dict):
        self.jid = jid
        self.envelope = envelope
        self.backend = wurk_backend(envelope["backend"])
        self.store = self.backend.store()

    @classmethod
    def from_job(cls, job: dict) -> "TaskRun | None":
        """The run behind a failed job, or None if its payload is not our envelope or this
        worker has no WurkBackend for it (the job's own error already says why)."""
        args = job.get("args")
        if not job.get("jid") or not isinstance(args, list) or len(args) != 1:
            return None
        envelope = args[0]
        if not isinstance(envelope, dict) or not set(results.ENVELOPE_KEYS) <= set(envelope):
            return None
        try:
            return cls(job["jid"], envelope)
        except ConfigurationError:
            return None

    def _update(self, change, extra_ttl_s: float = 0):
        record = self.store.update(self.jid, self.envelope, change, extra_ttl_s)
        return results.to_task_result(self.jid, record)

    def _signal(self, signal, result) -> None:
        signal.send(type(self.backend), task_result=result)

    def start(self):
        worker_id = process_identity()
        result = self._update(lambda record: results.mark_running(record, worker_id))
        self._signal(task_started, result)
        return result

    def call(self, result):
        task = result.task
        if task.takes_context:
            return task.call(TaskContext(task_result=result), *result.args, **result.kwargs)
        return task.call(*result.args, **result.kwargs)

    def succeed(self, value) -> None:
        # Django's rule for return values; anything it or JSON refuses fails the attempt.
        value = normalize_json(value)
        dumps(value)
        self._signal(task_finished,
                     self._update(lambda record: results.mark_successful(record, value)))

    def fail(self, exc: BaseException, *, final: bool, extra_ttl_s: float = 0) -> None:
        result = self._update(lambda record: results.mark_failed(record, exc, final=final),
                              extra_ttl_s)
        if final:
            self._signal(task_finished, result)

    def requeued(self) -> None:
        self._update(results.mark_requeued)


class TaskWrapper(Job):
    """Runs the task named in its one argument (the envelope), through Wurk's retries.

    A failure is re-raised untouched, so Wurk books the retry exactly as for any job;
    the retry hooks below then record the attempt's error in the result.
    """

    wurk_options = {"name": WIRE_NAME}

    def perform(self, envelope: dict):
        run = TaskRun(cast(str, self.jid), envelope)  # the worker set it
        result = run.start()
        try:
            run.succeed(run.call(result))
        except Shutdown:
            run.requeued()  # the manager has already put the job back on its queue
            raise

    @classmethod
    def retry_in(cls, count: int, exc: BaseException, job: dict):
        """Called by Wurk only when it is about to book a retry: READY again."""
        run = TaskRun.from_job(job)
        if run is not None:
            run.fail(exc, final=False, extra_ttl_s=retry_window_s(count))
        return None  # Wurk's own backoff

    @classmethod
    def retries_exhausted(cls, job: dict, exc: BaseException):
        """Called by Wurk when no retry follows (or with RETRY 0): FAILED for good."""
        run = TaskRun.from_job(job)
        if run is not None:
            run.fail(exc, final=True)
        return None  # dead set or discard, as the job's own options say
