"""One processor thread: fetch a job, run it inside the guards and middleware, ack it."""

import ctypes
import logging
import threading
import time

from .aio import resolve
from .errors import InvalidJobError, Shutdown
from .identity import tid
from .metrics import metric_class
from .payload import loads
from .redis import REDIS_ERRORS
from .registry import REGISTRY
from .retry import RetryHandled, send_to_dead

logger = logging.getLogger("wurk")

FETCH_BACKOFF_MAX_S = 5.0


def parse_job(raw: bytes) -> dict:
    """Decode a fetched payload; anything that is not a job hash raises InvalidJobError."""
    try:
        job = loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidJobError(f"payload is not valid JSON ({exc}): {raw[:200]!r}") from exc
    if not isinstance(job, dict):
        raise InvalidJobError(f"payload is JSON but not an object: {raw[:200]!r}")
    if not isinstance(job.get("class"), str) or not job["class"]:
        raise InvalidJobError(f"payload has no 'class' naming its task: {raw[:200]!r}")
    if not isinstance(job.get("args", []), list):
        raise InvalidJobError(f"payload 'args' is not a list: {raw[:200]!r}")
    job.setdefault("args", [])
    return job


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
        self._outage_started: float | None = None
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
        try:
            unit = self.fetcher.retrieve_work()
        except REDIS_ERRORS as exc:
            self._fetch_failed(exc)
            return None
        if self._outage_started is not None:
            logger.info("Redis is reachable again after %.1f s; fetching resumed",
                        time.monotonic() - self._outage_started)
            self._outage_started = None
            self._backoff_s = 0.0
        if unit is not None and self.done.is_set():
            # Fetched while quieting: give it straight back so another process runs it.
            unit.requeue()
            return None
        return unit

    def _fetch_failed(self, exc: BaseException) -> None:
        if self._outage_started is None:
            self._outage_started = time.monotonic()
            self._backoff_s = 0.0
            self.config.handle_exception(exc, {"context": "Error fetching job"})
        # Back off 1 s, 2 s, 4 s... up to 5 s, waking at once if the process stops.
        self._backoff_s = min(max(self._backoff_s * 2, 1.0), FETCH_BACKOFF_MAX_S)
        self.done.wait(self._backoff_s)

    def process(self, unit) -> None:
        raw = unit.job
        try:
            job = parse_job(raw)
        except InvalidJobError as exc:
            self.config.handle_exception(exc, {"context": "Invalid JSON for job", "jobstr": raw})
            send_to_dead(self.manager.connection, self.config, raw)
            unit.acknowledge()
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
        except Exception as exc:
            # Got past the retry guards (Redis down while booking a retry): leave it
            # unacknowledged so a reliable fetcher can hand it out again.
            self.config.handle_exception(exc, {"context": "Internal exception!",
                                               "job": job, "jobstr": raw})
        finally:
            manager.job_logger.leave(tokens)
            if ack:
                unit.acknowledge()

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
