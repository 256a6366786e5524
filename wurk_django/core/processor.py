"""One processor thread: fetch a job, run it inside the guards and middleware, ack it."""

import ctypes
import logging
import threading
import time

from .aio import resolve
from .errors import InvalidJobError, Shutdown
from .identity import tid
from .metrics import metric_class
from .payload import decode_job, dumps, error_class, error_message
from .redis import REDIS_ERRORS
from .registry import REGISTRY
from .retry import RetryHandled, send_to_dead

logger = logging.getLogger("wurk")

FETCH_BACKOFF_MAX_S = 5.0


class Processor:
    """Runs `while not done: process(fetch())` on its own daemon thread."""

    def __init__(self, manager, index: int):
        self.manager = manager
        self.config = manager.config
        self.fetcher = manager.fetcher
        self.done = manager.done
        self.name = f"wurk-{manager.capsule.name}-{index}"
        self.unit = None
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
            except Exception as exc:  # a bug of ours must not end the thread
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
        manager = self.manager
        ack = False
        tokens = manager.job_logger.enter(job)
        try:
            manager.retrier.global_guard(raw, unit.queue,
                                         lambda: self._dispatch(job, raw, unit.queue))
            ack = True
        except RetryHandled as handled:
            ack = True
            self.config.handle_exception(handled.__cause__ or handled,
                                         {"context": "Job raised exception", "job": job})
        except Shutdown:
            pass  # already requeued by the manager; never ack
        except REDIS_ERRORS as exc:
            # Redis went away while the failure was being booked: leave the job
            # unacknowledged, so the reliable fetcher's list still holds it.
            self.config.handle_exception(exc, {"context": "Redis failed while booking a job's "
                                                          "failure; it stays in this process's "
                                                          "list", "job": job})
        except Exception as exc:
            # Booking the failure itself failed (a corrupt retry_count, a hook's bad
            # answer): nothing else will ever run or show this job, so keep it in `dead`.
            self.config.handle_exception(exc, {"context": "Could not book a job's failure; "
                                                          "moving it to the dead set",
                                               "job": job})
            self._settle(unit, _unbookable(raw, exc))
        finally:
            manager.job_logger.leave(tokens)
            if ack:
                self._acknowledge(unit)

    def _settle(self, unit, member: bytes) -> None:
        """Keep a job that cannot run or be booked in `dead`, then let it go. On a Redis
        error it stays unacknowledged: only an outage may leave a job in the list."""
        try:
            send_to_dead(self.manager.connection, self.config, member)
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
        manager = self.manager
        thread_id = tid()
        started = manager.job_logger.start()
        manager.work_state.start(thread_id, queue, raw)
        failed = True
        try:
            manager.config.reloader(lambda: self._run(job, raw, queue))
            failed = False
        finally:
            manager.work_state.finish(thread_id)
            manager.counters.record(failed)
            manager.job_logger.finish(started, failed)

    def _run(self, job: dict, raw: bytes, queue: str):
        task = REGISTRY.get(job["class"])
        instance = task()
        instance.jid = job.get("jid")
        instance._interrupt = self.done
        return self.manager.retrier.local_guard(
            task, raw, queue, lambda: self._execute(instance, job, queue))

    def _execute(self, instance, job: dict, queue: str):
        chain = self.manager.server_middleware
        started = time.monotonic()
        failed = True
        try:
            if len(chain):
                chain.invoke(self.config, (instance, job, queue),
                             lambda: resolve(instance.perform(*job["args"])))
            else:
                resolve(instance.perform(*job["args"]))
            failed = False
        except Shutdown:
            failed = False  # an interrupted run books its time, as Sidekiq's does
            raise
        finally:
            elapsed_ms = int((time.monotonic() - started) * 1000)
            self.manager.metrics.track(metric_class(job), elapsed_ms, failed)

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
    except Exception:
        return raw
