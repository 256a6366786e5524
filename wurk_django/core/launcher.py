"""A worker process's lifecycle: managers, poller and heartbeat; quiet and stop."""

import collections
import logging
import os
import threading
import time
from typing import cast

from .client import Client
from .cron import CronDriver
from .features import install as install_features
from .fetch.reaper import Reaper
from .health_port import for_launcher as health_for
from .heartbeat import Heartbeat
from .history import HistorySnapshot
from .identity import hostname, process_identity
from .leader import Leader
from .manager import Manager
from .metrics import Metrics
from .payload import dumps
from .redis import connection_for
from .scheduled import Poller
from .stats import Counters, WorkState
from .version import VERSION

logger = logging.getLogger("wurk")


class Launcher:
    """Wires a worker together in plain top-to-bottom code and runs it until stopped."""

    def __init__(self, config):
        install_features()  # their job and death hooks must be in place before any fetch
        self.config = config
        self.identity = process_identity()
        self.connection = connection_for(config)
        self.counters = Counters()
        self.work_state = WorkState()
        self.metrics = Metrics()
        self.started_at = time.time()
        self.managers = [Manager(config, capsule, self.connection, self.counters,
                                 self.work_state, self.metrics)
                         for capsule in config.capsules_]
        # Leader-gated: cron, process cleanup (poller), the reaper's full sweep.
        self.leader = Leader(config, self.connection, self.identity)
        self.cron = CronDriver(config, self.connection, Client(config, self.connection),
                               self.leader.check())
        if not config.embedded:  # loops are registered by workers, never web processes
            self.leader.on_gain(self.cron.sync)
        self.leader.on_gain(lambda: config.fire_event("leader"))
        self.poller = Poller(config, self.connection, Client(config, self.connection),
                             is_leader=self.leader.check())
        self.reaper = None
        if config.fetch == "reliable":
            served = list(dict.fromkeys(n for c in config.capsules_ for n in c.queue_names))
            self.reaper = Reaper(config, self.connection, served, is_leader=self.leader.check())
        self.history = None
        if config.retain_history_s is not None:
            self.history = HistorySnapshot(config, self.connection, self.leader.check())
        self.metrics_port = None
        # A web process embedding a worker has the dashboard's endpoint instead; its
        # server's own worker processes would fight over one port.
        if config.metrics_port is not None and not config.embedded:
            from .metrics_port import MetricsPort  # prometheus_client: only where it is used

            self.metrics_port = MetricsPort(config.metrics_address,
                                            config.metrics_port + config.process_slot,
                                            busy=lambda: len(self.work_state),
                                            concurrency=config.total_concurrency)
        self.info_json = dumps(self.info())
        self.quieting = False
        self.heartbeat = Heartbeat(
            config, self.connection, self.identity, self.info_json, counters=self.counters,
            metrics=self.metrics, work=self.work_state.snapshot,
            is_quiet=lambda: self.quieting, on_signal=self.signal)
        self.stopping = False
        self.health = health_for(self)  # the health port (or a supervisor's board), if any
        self.stopped = threading.Event()
        # Signals (OS or remote) waiting for the main thread; see `signal()`.
        self.pending_signals: collections.deque[str] = collections.deque()
        self.signal_listeners: list = []
        self._quiet_lock = threading.Lock()

    def info(self) -> dict:
        capsules = self.config.capsules_
        queues = list(dict.fromkeys(name for c in capsules for name in c.queue_names))
        return {
            "hostname": hostname(),
            "started_at": self.started_at,
            "pid": os.getpid(),
            "tag": self.config.tag,
            "concurrency": self.config.total_concurrency,
            "capsules": {c.name: c.info() for c in capsules},
            "queues": queues,
            "weights": [c.weights for c in capsules],
            "labels": sorted(set(self.config.labels) | {"wurk", "python"}),
            "identity": self.identity,
            "version": VERSION,
            "embedded": self.config.embedded,
        }

    def run(self) -> None:
        """Start every thread and return; the caller waits for signals or `stopped`."""
        self.config.seal()
        if self.metrics_port is not None:
            self.metrics_port.start()
        self.heartbeat.start()
        if self.health is not None:
            self.health.start()
        # Quiet does not stand a leader down: a quiet process keeps enqueueing cron jobs.
        self.leader.start()
        self.cron.start(register_loops=not self.config.embedded)
        if self.reaper is not None:
            self.reaper.start()
        if self.history is not None:
            self.history.start()
        if self.quieting:
            return  # booted quiet: register and reap, but fetch nothing
        for manager in self.managers:
            manager.start()
        self.poller.start()

    def signal(self, name: str) -> None:
        """Queue a signal name for the main thread (called by OS handlers and the heartbeat)."""
        self.pending_signals.append(name)
        for listener in self.signal_listeners:
            listener()

    def quiet(self) -> None:
        """Stop fetching new jobs; running ones finish. Only the first call acts."""
        with self._quiet_lock:
            if self.quieting:
                return
            self.quieting = True
        for manager in self.managers:
            manager.quiet()
        self.poller.terminate()
        self.config.fire_event("quiet", reverse=True)

    def stop(self) -> None:
        """Graceful stop: quiet, drain until the timeout, requeue the rest, unregister."""
        deadline = time.monotonic() + self.config.shutdown_timeout_s
        self.stopping = True
        if self.metrics_port is not None:
            self.metrics_port.stop()  # first: a rolling restart's replacement waits for it
        self.quiet()
        stoppers = [threading.Thread(target=m.stop, args=(deadline,), name="wurk-stopper",
                                     daemon=True) for m in self.managers]
        for stopper in stoppers:
            stopper.start()
        self.config.fire_event("shutdown", reverse=True)
        for stopper in stoppers:
            stopper.join()
        self.poller.join()
        if self.reaper is not None:
            self.reaper.stop()
        # Leader-gated components first, then the lock: an in-flight cron tick must not
        # enqueue a loop the next leader fires too.
        self.cron.stop()
        if self.history is not None:
            self.history.stop()
        self.leader.stop()
        self.heartbeat.stop()
        self.heartbeat.clear()
        if self.health is not None:
            self.health.stop()  # last: probes saw "stopping" for the whole drain
        self._flush_metrics()
        self.config.fire_event("exit", reverse=True)
        self.stopped.set()

    def force(self) -> None:
        """Stop waiting for running jobs: requeue them now (a second Ctrl-C)."""
        for manager in self.managers:
            manager.force.set()

    def _flush_metrics(self) -> None:
        try:
            self.metrics.flush(self.connection)
        except Exception as exc:  # noqa: BLE001 - lost metrics must not stop the exit
            self.config.handle_exception(exc, {"context": "metrics flush at exit"})

    def dump_threads(self) -> None:
        """Log every thread's stack (TTIN), to see where a stuck worker is."""
        import sys
        import traceback
        frames = sys._current_frames()
        for thread in threading.enumerate():
            frame = frames.get(cast(int, thread.ident))  # started, so it has one
            stack = "".join(traceback.format_stack(frame)) if frame else "(no frame)\n"
            logger.warning("Thread %s (%s)\n%s", thread.name, thread.ident, stack)
