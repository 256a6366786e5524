"""A capsule's processor threads: start them, quiet them, stop them with a deadline."""

import logging
import threading
import time
from typing import cast

from .fetch import fetcher_for
from .joblog import JobLogger
from .processor import CapsuleContext, Processor
from .retry import JobRetry

logger = logging.getLogger("wurk")

HARD_SHUTDOWN_GRACE_S = 3.0


class Manager:
    """Owns one capsule's processors; on a late stop it requeues their jobs."""

    def __init__(self, config, capsule, connection, counters, work_state, metrics):
        self.config = config
        self.capsule = capsule
        self.fetcher = fetcher_for(config, capsule, connection)
        self.done = threading.Event()
        self.force = threading.Event()  # a second Ctrl-C: stop waiting for jobs
        context = CapsuleContext(
            name=capsule.name, config=config, connection=connection, fetcher=self.fetcher,
            done=self.done, retrier=JobRetry(config, connection), job_logger=JobLogger(config),
            counters=counters, work_state=work_state, metrics=metrics,
            server_middleware=config.server_middleware.copy())
        self.processors = [Processor(context, index) for index in range(capsule.concurrency)]

    def start(self) -> None:
        for processor in self.processors:
            processor.start()

    def quiet(self) -> None:
        if self.done.is_set():
            return
        logger.info("Terminating quiet threads for %s capsule", self.capsule.name)
        self.done.set()
        self.fetcher.quiet()

    def busy(self) -> list[Processor]:
        return [p for p in self.processors if p.thread is not None and p.thread.is_alive()]

    def stop(self, deadline: float) -> None:
        """Quiet, wait for running jobs until `deadline`, then requeue what is left."""
        self.quiet()
        while self.busy() and time.monotonic() < deadline and not self.force.is_set():
            _thread_of(self.busy()[0]).join(min(0.1, max(deadline - time.monotonic(), 0)))
        self._flush_fetcher()
        if self.busy():
            self.hard_shutdown()
        self.fetcher.close()

    def _flush_fetcher(self) -> None:
        try:
            self.fetcher.flush_acks()
            self.fetcher.return_prefetched()
        except Exception as exc:  # noqa: BLE001 - the shutdown goes on, reported
            self.config.handle_exception(exc, {"context": "Flushing acknowledgements"})

    def hard_shutdown(self) -> None:
        busy = self.busy()
        units = [p.unit for p in busy if p.unit is not None]
        if units:
            logger.warning("Terminating %d busy threads; requeueing jobs %s", len(busy),
                           ", ".join(_jid_of(unit.job) for unit in units))
            try:
                self.fetcher.bulk_requeue(units)
            except Exception as exc:  # noqa: BLE001 - the shutdown goes on, reported
                self.config.handle_exception(exc, {"context": "Requeueing jobs at shutdown"})
        for processor in busy:
            if processor.unit is not None:
                processor.kill()
        deadline = time.monotonic() + HARD_SHUTDOWN_GRACE_S
        for processor in busy:
            _thread_of(processor).join(max(deadline - time.monotonic(), 0))


def _thread_of(processor: Processor) -> threading.Thread:
    """A busy processor's thread: `busy()` lists only processors that have one."""
    return cast(threading.Thread, processor.thread)


def _jid_of(raw: bytes) -> str:
    marker = b'"jid":"'
    start = raw.find(marker)
    if start < 0:
        return "?"
    start += len(marker)
    return raw[start:raw.find(b'"', start)].decode("utf-8", "replace")
