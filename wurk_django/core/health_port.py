"""The worker's health port (`--health-port`): `GET /live` and `GET /ready`, 200 or 503
with a small JSON body, for an orchestrator's probes (Kubernetes restarts a worker that
fails liveness and stops counting one that fails readiness).

Live: the heartbeat thread is alive and its last successful beat is not overdue. Ready:
fetching (not quiet, not stopping) with Redis answering: no fetch or ack outage, and a
recent beat. One process serves the port itself; a supervisor serves it for all of its
children, which publish their state on a board in memory shared across fork().
"""

import json
import logging
import mmap
import os
import struct
import threading
import time

from .errors import ConfigurationError
from .timer_loop import TimerLoop

logger = logging.getLogger("wurk")

PATHS = ("/live", "/ready")
PUBLISH_INTERVAL_S = 0.5
OVERDUE_BEATS = 3


def overdue_s(config) -> float:
    """Past this without a successful beat the worker is not live: three beats missed,
    the last one allowed its full network timeout. 35 s with the defaults, under the
    60 s after which other workers count the process as gone and take its jobs."""
    return OVERDUE_BEATS * config.heartbeat_interval_s + config.network_timeout_s


def stale_s(config) -> float:
    """Past this without a successful beat the worker is not ready: one beat late."""
    return config.heartbeat_interval_s + max(config.heartbeat_interval_s, 1.0)


class WorkerHealth:
    """Liveness and readiness of the worker in this process, from its launcher."""

    def __init__(self, launcher, clock=time.monotonic):
        self.launcher = launcher
        self.heartbeat = launcher.heartbeat
        self.overdue_s = overdue_s(launcher.config)
        self.stale_s = stale_s(launcher.config)
        self._clock = clock

    def beat_age_s(self) -> float | None:
        last = self.heartbeat.last_success
        return None if last is None else self._clock() - last

    def live(self) -> tuple[bool, dict]:
        age = self.beat_age_s()
        if not self.heartbeat.running:
            return False, {"status": "failing", "heartbeat": "stopped"}
        if age is None or age > self.overdue_s:
            return False, {"status": "failing", "heartbeat": "overdue"}
        return True, {"status": "ok", "heartbeat": "ok"}

    def reasons_not_ready(self) -> list[str]:
        launcher = self.launcher
        reasons = []
        if launcher.stopping:
            reasons.append("stopping")
        elif launcher.quieting:
            reasons.append("quiet")
        fetchers = [manager.fetcher for manager in launcher.managers]
        age = self.beat_age_s()
        if self.heartbeat.in_outage or age is None or age > self.stale_s or any(
                f.outage.in_outage or f.ack_outage.in_outage for f in fetchers):
            reasons.append("redis unavailable")
        return reasons

    def ready(self) -> tuple[bool, dict]:
        reasons = self.reasons_not_ready()
        if reasons:
            return False, {"status": "not ready", "reasons": reasons}
        return True, {"status": "ready"}


class HealthServer:
    """A small stdlib HTTP server on a daemon thread; `health` answers live() and ready()."""

    def __init__(self, address: str, port: int, health):
        from http.server import ThreadingHTTPServer

        try:
            self.server = ThreadingHTTPServer((address, port), _handler_class(health))
        except OSError as exc:
            raise ConfigurationError(f"health_port: cannot listen on {address}:{port}: "
                                     f"{exc.strerror or exc}", field="health_port") from None
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever, args=(0.5,),
                                        name="wurk-health-port", daemon=True)

    def start(self) -> "HealthServer":
        self._thread.start()
        logger.info("Health probes on port %d: GET /live, GET /ready", self.port)
        return self

    def stop(self) -> None:
        if self._thread.is_alive():
            self.server.shutdown()
        self.server.server_close()

    def forget_in_child(self) -> None:
        """In a forked child: close its copy of the listening socket (never shut it down,
        which would stop the parent's too)."""
        self.server.socket.close()


def _handler_class(health) -> type:
    """The request handler answering for `health`. http.server (and the email package it
    pulls in, ~10 ms) is imported here, by the processes that serve a port, not by every
    worker's boot."""
    from http.server import BaseHTTPRequestHandler

    class HealthHandler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):
            path = self.path.split("?", 1)[0].rstrip("/") or "/"
            if path not in PATHS:
                return self._answer(404, {"status": "not found", "paths": list(PATHS)})
            ok, body = health.live() if path == "/live" else health.ready()
            self._answer(200 if ok else 503, body)

        def _answer(self, status: int, body: dict) -> None:
            payload = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format, *args):
            pass  # a probe every few seconds would fill the worker's log

    return HealthHandler


# --- a supervisor's children ------------------------------------------------------------

class HealthBoard:
    """One entry per child, in anonymous shared memory made before fork(): the pid that
    wrote it, when (monotonic, one clock for all processes on Linux), its last
    successful beat, and whether it is ready. A torn read can at worst flip one probe."""

    ENTRY = struct.Struct("=qdd?")
    NO_BEAT = -1.0

    def __init__(self, entries: int):
        self.entries = entries
        self._memory = mmap.mmap(-1, self.ENTRY.size * entries)

    def publish(self, index: int, last_beat: float | None, ready: bool) -> None:
        self.ENTRY.pack_into(self._memory, index * self.ENTRY.size, os.getpid(),
                             time.monotonic(), self.NO_BEAT if last_beat is None else last_beat,
                             ready)

    def read(self, index: int) -> tuple[int, float, float | None, bool]:
        pid, written, beat, ready = self.ENTRY.unpack_from(self._memory,
                                                           index * self.ENTRY.size)
        return pid, written, None if beat == self.NO_BEAT else beat, ready

    def clear(self, index: int) -> None:
        self.ENTRY.pack_into(self._memory, index * self.ENTRY.size, 0, 0.0, self.NO_BEAT,
                             False)


_board: tuple[HealthBoard, int] | None = None  # this child's board and entry, if any


def use_board(board: HealthBoard, index: int) -> None:
    """In a supervisor's child: publish to entry `index` instead of serving a port."""
    global _board
    _board = (board, index)


class BoardWriter:
    """Publishes this child's health to its entry every half second."""

    def __init__(self, health: WorkerHealth, board: HealthBoard, index: int):
        self.health, self.board, self.index = health, board, index
        self.loop = TimerLoop("wurk-health-board", PUBLISH_INTERVAL_S, self.publish,
                              first_wait_s=0)

    def start(self) -> "BoardWriter":
        self.loop.start()
        return self

    def publish(self) -> None:
        ready = not self.health.reasons_not_ready() and self.health.live()[0]
        self.board.publish(self.index, self.health.heartbeat.last_success, ready)

    def stop(self) -> None:
        self.loop.stop()
        self.board.publish(self.index, self.health.heartbeat.last_success, False)


def for_launcher(launcher):
    """What a launcher runs for its health, not started yet (`start()`, `stop()`): a
    board writer in a supervisor's child, a server (its port bound now, so a port in use
    fails the boot before anything runs) where `health_port` is set, else None."""
    config = launcher.config
    if _board is not None:
        return BoardWriter(WorkerHealth(launcher), *_board)
    if config.health_port is None or config.embedded:
        return None
    return HealthServer(config.health_address, config.health_port, WorkerHealth(launcher))


class SwarmHealth:
    """A supervisor's view: live while no child is wedged, ready while all are ready.

    A child still booting, or a slot waiting to restart one, keeps the swarm live (the
    supervisor is handling it) but not ready.
    """

    def __init__(self, supervisor, port: "SwarmHealthPort", config):
        self.supervisor = supervisor
        self.port = port
        self.overdue_s = overdue_s(config)
        self.fresh_s = 4 * PUBLISH_INTERVAL_S

    def _entries(self):
        """(slot, its current child's entry or None) for every slot."""
        for slot in self.supervisor.slots:
            index = self.port.entries.get(slot.pid)
            entry = self.port.board.read(index) if index is not None else None
            yield slot, entry if entry and entry[0] == slot.pid else None

    def live(self) -> tuple[bool, dict]:
        now = time.monotonic()
        wedged = [slot.index for slot, entry in self._entries() if slot.ready and (
            entry is None or now - entry[1] > self.fresh_s or entry[2] is None
            or now - entry[2] > self.overdue_s)]
        if wedged:
            return False, {"status": "failing", "wedged_slots": wedged}
        return True, {"status": "ok", "processes": len(self.supervisor.slots)}

    def ready(self) -> tuple[bool, dict]:
        now = time.monotonic()
        if self.supervisor.stopping or self.supervisor.quiet:
            return False, {"status": "not ready",
                           "reasons": ["stopping" if self.supervisor.stopping else "quiet"]}
        waiting = [slot.index for slot, entry in self._entries() if not slot.ready
                   or entry is None or now - entry[1] > self.fresh_s or not entry[3]]
        if waiting:
            return False, {"status": "not ready", "slots_not_ready": waiting}
        return True, {"status": "ready", "processes": len(self.supervisor.slots)}


class SwarmHealthPort:
    """The supervisor's side: the board, which entry each child writes, and the server,
    bound in the parent before the first fork."""

    def __init__(self, supervisor, config):
        # Each slot's child, plus the old ones a rolling restart is still draining.
        self.board = HealthBoard(2 * len(supervisor.slots) + 2)
        self.entries: dict[int, int] = {}  # child pid -> its board entry
        self.server = HealthServer(config.health_address, config.health_port,
                                   SwarmHealth(supervisor, self, config))

    def take_entry(self) -> int:
        """A free entry for the child about to be forked."""
        used = set(self.entries.values())
        index = next(i for i in range(self.board.entries) if i not in used)
        self.board.clear(index)
        return index

    def child_started(self, pid: int, index: int) -> None:
        self.entries[pid] = index

    def child_gone(self, pid: int) -> None:
        self.entries.pop(pid, None)

    def in_child(self, index: int) -> None:
        """In the forked child: drop the parent's socket, write to entry `index`."""
        self.server.forget_in_child()
        use_board(self.board, index)

    def start(self) -> None:
        self.server.start()

    def stop(self) -> None:
        self.server.stop()
