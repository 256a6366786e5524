"""One processor thread: fetch a job, run it inside the guards and middleware, ack it."""

import ctypes
import logging
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .aio import resolve
from .errors import InvalidJobError, Shutdown
from .features import HOOKS, JobHandled, JobRun, job_hooks_for, run_with_job_hooks, settle_claimed
from .identity import tid
from .metrics import metric_class
from .payload import decode_job, dumps, error_class, error_message
from .redis import REDIS_ERRORS
from .registry import REGISTRY
from .retry import RetryHandled, send_to_dead

if TYPE_CHECKING:
    from .config import Config
    from .fetch.base import Fetcher, UnitOfWork
    from .joblog import JobLogger
    from .metrics import Metrics
    from .middleware import Chain
    from .redis import RedisConnection
    from .retry import JobRetry
    from .stats import Counters, WorkState

logger = logging.getLogger("wurk")

FETCH_BACKOFF_MAX_S = 5.0


@dataclass(frozen=True, slots=True)
class CapsuleContext:
    """What a capsule's processor threads share, built once by its Manager.

    The process-wide parts (connection, counters, work state, metrics) are the same
    objects in every capsule; the fetcher, the done event, the retrier, the job logger
    and the middleware chain are the capsule's own.
    """

    name: str
    config: "Config"
    connection: "RedisConnection"
    fetcher: "Fetcher"
    done: threading.Event
    retrier: "JobRetry"
    job_logger: "JobLogger"
    counters: "Counters"
    work_state: "WorkState"
    metrics: "Metrics"
    server_middleware: "Chain"


class Processor:
    """Runs `while not done: process(fetch())` on its own daemon thread."""

    def __init__(self, context: CapsuleContext, index: int):
        # Each collaborator is copied onto the processor: one attribute read per use
        # on the per-job path, never a walk through the context.
        self.config = context.config
        self.connection = context.connection
        self.fetcher = context.fetcher
        self.done = context.done
        self.retrier = context.retrier
        self.job_logger = context.job_logger
        self.counters = context.counters
        self.work_state = context.work_state
        self.metrics = context.metrics
        self.server_middleware = context.server_middleware
        self.name = f"wurk-{context.name}-{index}"
        self.unit: UnitOfWork | None = None
        self.thread: threading.Thread | None = None
        self._backoff_s = 0.0

    def start(self) -> None:
        self.thread = threading.Thread(target=self.run, name=self.name, daemon=True)
        self.thread.start()

    def run(self) -> None:
        while not self.done.is_set():
            try:
                self.process_one()
            except Shutdown:
                return
            except Exception as exc:  # noqa: BLE001 - a bug of ours must not end the thread
                self.config.handle_exception(exc, {"context": "Processor internal error"})
                time.sleep(0.1)

    def process_one(self) -> None:
        unit = self.fetch()
        if unit is None:
            return
        self.unit = unit
        try:
            self.process(unit)
        finally:
            self.unit = None

    def fetch(self):
        started = time.monotonic()
        try:
            unit = self.fetcher.retrieve_work()
        except REDIS_ERRORS as exc:
            self._fetch_failed(exc, started)
            return None
        self._backoff_s = 0.0
        if unit is not None and self.done.is_set():
            # Fetched while quieting: give it straight back so another process runs it.
            unit.requeue()
            return None
        return unit

    def _fetch_failed(self, exc: BaseException, started: float) -> None:
        self.fetcher.outage.failed(exc, since=started)
        # Back off 1 s, 2 s, 4 s... up to 5 s, waking at once if the process stops.
        self._backoff_s = min(max(self._backoff_s * 2, 1.0), FETCH_BACKOFF_MAX_S)
        self.done.wait(self._backoff_s)

    def process(self, unit) -> None:
        raw = unit.job
        try:
            job = decode_job(raw)
        except InvalidJobError as exc:
            self.config.handle_exception(exc, {"context": "Invalid JSON for job", "jobstr": raw})
            self._settle(unit, raw)
            return
        unit.jid = job.get("jid") if isinstance(job.get("jid"), str) else None
        job_logger = self.job_logger
        ack = False
        tokens = job_logger.enter(job)
        try:
            self.retrier.global_guard(raw, unit.queue,
                                      lambda: self._dispatch(job, raw, unit.queue))
            ack = True
        except RetryHandled as handled:
            ack = True
            self.config.handle_exception(handled.__cause__ or handled,
                                         {"context": "Job raised exception", "job": job})
        except JobHandled:
            ack = True  # a feature decided its fate (rescheduled, skipped): nothing failed
        except Shutdown:
            pass  # already requeued by the manager; never ack
        except REDIS_ERRORS as exc:
            # Redis went away while the failure was being booked: leave the job
            # unacknowledged, so the reliable fetcher's list still holds it.
            self.config.handle_exception(exc, {"context": "Redis failed while booking a job's "
                                                          "failure; it stays in this process's "
                                                          "list", "job": job})
        except Exception as exc:  # noqa: BLE001 - whatever failed, the job is kept (in dead)
            # Booking the failure itself failed (a corrupt retry_count, a hook's bad
            # answer): nothing else will ever run or show this job, so keep it in `dead`.
            self.config.handle_exception(exc, {"context": "Could not book a job's failure; "
                                                          "moving it to the dead set",
                                               "job": job})
            self._settle(unit, _unbookable(raw, exc))
        finally:
            job_logger.leave(tokens)
            if ack:
                self._acknowledge(unit)

    def _settle(self, unit, member: bytes) -> None:
        """Keep a job that cannot run or be booked in `dead`, then let it go. On a Redis
        error it stays unacknowledged: only an outage may leave a job in the list."""
        try:
            send_to_dead(self.connection, self.config, member)
        except REDIS_ERRORS as exc:
            self.config.handle_exception(exc, {"context": "Redis failed while moving a job "
                                                          "to the dead set", "jobstr": member})
            return
        self._acknowledge(unit)

    def _acknowledge(self, unit) -> None:
        try:
            unit.acknowledge()
        except REDIS_ERRORS:
            pass  # the fetcher reported it and sends the ack with its next round trip

    def _dispatch(self, job: dict, raw: bytes, queue: str):
        job_logger, work_state = self.job_logger, self.work_state
        thread_id = tid()
        started = job_logger.start()
        work_state.start(thread_id, queue, raw)
        failed = True
        try:
            self.config.reloader(lambda: self._run(job, raw, queue))
            failed = False
        except JobHandled:
            failed = False
            raise
        finally:
            work_state.finish(thread_id)
            self.counters.record(failed)
            job_logger.finish(started, failed)

    def _run(self, job: dict, raw: bytes, queue: str):
        task = REGISTRY.get(job["class"])
        instance = task()
        instance.jid = job.get("jid")
        instance._interrupt = self.done
        return self.retrier.local_guard(
            task, raw, queue, lambda: self._execute(instance, job, queue, raw))

    def _execute(self, instance, job: dict, queue: str, raw: bytes):
        chain = self.server_middleware
        started = time.monotonic()
        failed = True
        try:
            try:
                hooks = (job_hooks_for(job, getattr(instance, "task_options", None))
                         if HOOKS.job else ())
                if hooks:
                    run = JobRun(job, raw, queue, instance, self.config, self.connection,
                                 self.unit)
                    run_with_job_hooks(hooks, run, lambda: self._perform(chain, instance,
                                                                         job, queue))
                elif len(chain):
                    self._perform(chain, instance, job, queue)
                else:
                    resolve(instance.perform(*job["args"]))
            except HOOKS.claimed as exc:
                # Read only when the job raised: a job that raises nothing pays nothing.
                settle_claimed(exc, JobRun(job, raw, queue, instance, self.config,
                                           self.connection, self.unit))
            failed = False
        except (Shutdown, JobHandled):
            failed = False  # an interrupted run books its time, as Sidekiq's does
            raise
        finally:
            elapsed_ms = int((time.monotonic() - started) * 1000)
            self.metrics.track(metric_class(job), elapsed_ms, failed)

    def _perform(self, chain, instance, job: dict, queue: str):
        if len(chain):
            return chain.invoke(self.config, (instance, job, queue),
                                lambda: resolve(instance.perform(*job["args"])))
        return resolve(instance.perform(*job["args"]))

    def kill(self) -> None:
        """Raise Shutdown inside this thread's running job (hard shutdown, after requeue).

        Python runs it at the thread's next bytecode, so a job blocked in C code
        stops when that call returns.
        """
        thread = self.thread
        if thread is None or thread.ident is None or not thread.is_alive():
            return
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident),
                                                   ctypes.py_object(Shutdown))


def _unbookable(raw: bytes, exc: BaseException) -> bytes:
    """The dead-set member for a job whose failure could not be booked: its fields as
    stored plus why, or its exact bytes when even that cannot be written."""
    try:
        job = decode_job(raw)
        job["error_class"] = error_class(exc)
        job["error_message"] = f"could not book this job's failure: {error_message(exc)}"
        return dumps(job)
    except Exception:  # noqa: BLE001 - the last resort: the exact bytes
        return raw
