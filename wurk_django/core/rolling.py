"""Rolling restart: replace a supervisor's children one at a time.

A non-blocking state machine advanced one phase per supervisor tick: fork the
replacement, wait until it is serving (its first heartbeat, reported on its readiness
pipe), TERM the old child, wait for it to exit, then the next slot. At least N-1
children keep serving throughout.
"""

import logging
import os
import signal
import time
from collections.abc import Callable
from typing import Any

logger = logging.getLogger("wurk")

HEARTBEAT_WAIT_S = 30.0


class RollingRestart:
    """Replaces the children of `slots` one at a time; the supervisor calls `step()`.

    Args:
        slots: the supervisor's slots. A slot's `pid` is its serving child, `ready` says
            that child has registered, and `old_pids` lists children being replaced,
            which the supervisor removes as it reaps them.
        fork: starts a child in a slot (setting the slot's `pid` and `ready`) and
            returns its pid, or None when fork() failed.
        exit_limit_s: how long an old child may take to exit after TERM before SIGKILL.
        kill: sends a signal to a pid; a process that is already gone is no error.
        heartbeat_wait_s: how long to wait for a replacement's first heartbeat before
            replacing the old child anyway.
    """

    def __init__(self, slots: list, fork: Callable, exit_limit_s: float, *,
                 kill: Callable[[int, int], None] | None = None,
                 heartbeat_wait_s: float = HEARTBEAT_WAIT_S):
        self.slots = slots
        self.fork = fork
        self.exit_limit_s = exit_limit_s
        self.kill = kill or _signal
        self.heartbeat_wait_s = heartbeat_wait_s
        self.queue: list = []
        self.slot: Any = None  # the supervisor's slot being replaced
        self.phase: str | None = None
        self.old_pid: Any = None  # its old child's pid, once a replacement began
        self.new_pid: int | None = None
        self.old_ready = False
        self.since = 0.0
        self.killed = False

    def request_all(self) -> None:
        for slot in self.slots:
            self.request(slot)

    def request(self, slot) -> None:
        if not self.busy_with(slot):
            self.queue.append(slot)

    def busy_with(self, slot) -> bool:
        return slot is self.slot or slot in self.queue

    def step(self) -> None:
        if self.phase is None:
            self._begin_next()
        elif self.phase == "await_heartbeat":
            self._await_heartbeat()
        elif self.phase == "await_exit":
            self._await_exit()

    def _begin_next(self) -> None:
        while self.queue:
            slot = self.queue.pop(0)
            if slot.pid is None:
                continue  # already dead: the normal respawn replaces it
            self.slot, self.old_pid, self.old_ready = slot, slot.pid, slot.ready
            slot.old_pids.append(slot.pid)
            slot.pid = None
            self.new_pid = self.fork(slot)
            if self.new_pid is None:  # fork failed: keep the old child
                self._keep_old("the fork failed")
                return
            self.phase, self.since = "await_heartbeat", time.monotonic()
            return

    def _await_heartbeat(self) -> None:
        slot = self.slot
        if slot.pid != self.new_pid:
            self._keep_old(f"replacement {self.new_pid} died before its first heartbeat")
            return
        waited = time.monotonic() - self.since
        if not slot.ready:
            if waited < self.heartbeat_wait_s:
                return
            logger.warning("No heartbeat from %d after %.0f s; replacing %d anyway",
                           self.new_pid, waited, self.old_pid)
        logger.info("Rolling restart: %d is up; stopping %d", self.new_pid, self.old_pid)
        self.kill(self.old_pid, signal.SIGTERM)
        self.phase, self.since, self.killed = "await_exit", time.monotonic(), False

    def _await_exit(self) -> None:
        slot = self.slot
        if self.old_pid not in slot.old_pids:  # reaped by the supervisor
            self._finish()
            return
        limit = self.exit_limit_s
        if not self.killed and time.monotonic() - self.since > limit:
            logger.warning("Worker process %d ignored TERM for %.0f s; SIGKILL", self.old_pid,
                           limit)
            self.kill(self.old_pid, signal.SIGKILL)
            self.killed = True

    def _keep_old(self, reason: str) -> None:
        slot = self.slot
        logger.warning("Rolling restart of slot %d: %s; keeping process %d", slot.index,
                       reason, self.old_pid)
        if self.old_pid in slot.old_pids:
            slot.old_pids.remove(self.old_pid)
        if slot.pid is not None and slot.pid != self.old_pid:
            slot.old_pids.append(slot.pid)  # a replacement that lives on is stopped below
            self.kill(slot.pid, signal.SIGTERM)
        slot.pid, slot.ready = self.old_pid, self.old_ready
        self._finish()

    def _finish(self) -> None:
        self.slot = self.phase = self.old_pid = self.new_pid = None


def _signal(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass
