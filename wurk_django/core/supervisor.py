"""`--processes N`: a parent that forks N full workers and keeps them running.

The parent never fetches. It forks after the application is imported, so children
share its memory copy-on-write; it restarts a child that dies (at once if it had been
serving, with back-off if it died booting), relays quiet and stop, replaces children one
at a time on USR1 or when one outgrows `max_memory_mb`, and SIGKILLs a child still alive
`timeout + 5 s` after a stop.
"""

import ctypes
import logging
import os
import select
import signal
import time
from dataclasses import dataclass, field

from .health_port import SwarmHealthPort
from .identity import process_nonce
from .joblog import reopen_log_files, stop_logging
from .redis import close_connections
from .rolling import RollingRestart
from .timer_loop import TimerLoop

logger = logging.getLogger("wurk")

TICK_S = 0.2
BACKOFF_START_S = 1.0
BACKOFF_MAX_S = 30.0
SHUTDOWN_GRACE_S = 5.0
MEMORY_CHECK_INTERVAL_S = 10.0
ORPHAN_CHECK_INTERVAL_S = 5.0
RELAY_INTERVAL_S = 1.0
PR_SET_PDEATHSIG = 1
HANDLED_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGTSTP, signal.SIGUSR1,
                   signal.SIGUSR2, signal.SIGTTIN)
# SIGCHLD only wakes the loop, so a dead child is replaced now rather than a tick later.
BLOCKED_AT_FORK = (*HANDLED_SIGNALS, signal.SIGCHLD)


@dataclass
class Slot:
    index: int
    pid: int | None = None
    ready: bool = False  # the current child has registered, so it fetches (see fork())
    started: float = 0.0
    backoff_s: float = BACKOFF_START_S
    restart_at: float = 0.0
    over_memory_since: float | None = None
    old_pids: list = field(default_factory=list)


class Supervisor:
    """Forks and watches `processes` children, each running `child_main(config, quiet)`."""

    def __init__(self, config, processes: int, child_main, *, max_memory_mb: float | None = None,
                 before_fork=(), sizing_note: str = ""):
        self.config = config
        self.sizing_note = sizing_note  # how "auto" counted the processes, for the log
        self.slots = [Slot(index) for index in range(processes)]
        self.child_main = child_main
        self.max_memory_bytes = int(max_memory_mb * 1024 * 1024) if max_memory_mb else None
        self.before_fork = list(before_fork)
        self.pending: list[str] = []
        self.quiet = False  # sticky: children forked after TSTP boot quiet
        self.stopping = False
        self.rolling = RollingRestart(self.slots, self.fork,
                                      config.shutdown_timeout_s + SHUTDOWN_GRACE_S, kill=_kill)
        self._read_fd, self._write_fd = os.pipe()
        os.set_blocking(self._write_fd, False)
        self._ready_fds: dict[int, int] = {}  # child pid -> read end of its readiness pipe
        self._last_memory_check = time.monotonic()
        # The health port answers for every child; bound here, so a port in use fails
        # the boot before any fork.
        self.health = SwarmHealthPort(self, config) if config.health_port is not None else None

    # --- signals ------------------------------------------------------------------

    def _install_signals(self) -> None:
        for number in HANDLED_SIGNALS:
            signal.signal(number, self._on_signal)
        signal.signal(signal.SIGCHLD, self._wake)

    def _on_signal(self, number, frame) -> None:
        self.pending.append(signal.Signals(number).name[3:])
        self._wake(number, frame)

    def _wake(self, number, frame) -> None:
        try:
            os.write(self._write_fd, b"!")
        except BlockingIOError:
            pass

    def _wait_tick(self) -> None:
        """Sleep up to a tick; a signal, a child's exit or a child's readiness ends it."""
        pipes = dict(self._ready_fds)
        ready, _, _ = select.select([self._read_fd, *pipes.values()], [], [], TICK_S)
        if self._read_fd in ready:
            os.read(self._read_fd, 4096)
        for pid, fd in pipes.items():
            if fd in ready:
                self._read_readiness(pid)

    def _read_readiness(self, pid: int) -> None:
        """Take what child `pid` wrote on its readiness pipe (nothing, a byte, or EOF)."""
        fd = self._ready_fds.get(pid)
        if fd is None:
            return
        try:
            data = os.read(fd, 64)
        except BlockingIOError:
            return
        if not data:  # EOF: the child is gone; reap() tells how
            self._close_readiness(pid)
            return
        for slot in self.slots:
            if slot.pid == pid and not slot.ready:
                slot.ready = True
                slot.backoff_s = BACKOFF_START_S  # it booted: a later death is no boot loop
                logger.info("Worker process %d (slot %d) is up", pid, slot.index)

    def _close_readiness(self, pid: int) -> None:
        fd = self._ready_fds.pop(pid, None)
        if fd is not None:
            os.close(fd)

    # --- main loop ---------------------------------------------------------------------

    def run(self) -> int:
        process_nonce()  # made before fork(), so every child shares it (see identity.py)
        self._install_signals()
        logger.info("Wurk supervisor %d starting %d worker processes%s", os.getpid(),
                    len(self.slots), f" ({self.sizing_note})" if self.sizing_note else "")
        if self.health is not None:
            self.health.start()
        for slot in self.slots:
            self.fork(slot)
        while not self.stopping:
            self._wait_tick()
            self._dispatch_signals()
            if self.stopping:
                break
            self.reap()
            self.respawn()
            self.check_memory()
            self.rolling.step()
        return self.drain()

    def _dispatch_signals(self) -> None:
        while self.pending:
            name = self.pending.pop(0)
            if name in ("TERM", "INT"):
                logger.info("Supervisor received %s; stopping every worker process", name)
                self.stopping = True
            elif name == "TSTP":
                logger.info("Supervisor received TSTP; quieting every worker process")
                self.quiet = True
                self.relay(signal.SIGTSTP)
            elif name == "USR1":
                logger.info("Supervisor received USR1; rolling restart of %d processes",
                            len(self.slots))
                self.rolling.request_all()
            elif name == "USR2":
                reopened = reopen_log_files()  # the parent writes to the same files
                logger.info("Supervisor received USR2; reopened %d log file%s, relaying",
                            reopened, "" if reopened == 1 else "s")
                self.relay(signal.SIGUSR2)
            elif name == "TTIN":
                self.relay(signal.SIGTTIN)

    def child_pids(self) -> list[int]:
        pids = [s.pid for s in self.slots if s.pid]
        return pids + [pid for s in self.slots for pid in s.old_pids]

    def relay(self, signum: int) -> None:
        for pid in self.child_pids():
            try:
                os.kill(pid, signum)
            except ProcessLookupError:
                pass

    # --- forking ------------------------------------------------------------------------

    def fork(self, slot: Slot) -> int | None:
        """Start a child in `slot`; a failed fork re-arms the slot's back-off.

        Each child gets a readiness pipe and writes one byte on it when its first
        heartbeat has registered it: the launcher does that at the top of the same call
        that starts the fetching threads, so it is the earliest sign that the child got
        through its boot (Redis reachable, startup hooks passed). It costs the parent no
        Redis query, and the pipe's EOF also tells it at once that the child is gone.
        """
        close_connections()  # children must open their own sockets
        for hook in self.before_fork:
            hook()
        parent = os.getpid()
        entry = self.health.take_entry() if self.health is not None else None
        ready_read, ready_write = os.pipe()
        # Signals stay blocked across fork(): the child must not run the parent's handler
        # (its pipe is about to close), and it unblocks them only once the worker has
        # installed its own (runner.SignalPipe.install), so none is lost meanwhile.
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, BLOCKED_AT_FORK)
        try:
            pid = os.fork()
        except OSError as exc:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous)
            os.close(ready_read)
            os.close(ready_write)
            logger.error("fork() failed for worker slot %d: %s", slot.index, exc)
            self._schedule_restart(slot, was_ready=False)
            return None
        if pid == 0:
            self._become_child(parent, ready_write, slot.index, entry)
        if self.health is not None and entry is not None:
            self.health.child_started(pid, entry)
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
        os.close(ready_write)
        os.set_blocking(ready_read, False)
        self._ready_fds[pid] = ready_read
        slot.pid, slot.ready, slot.started = pid, False, time.monotonic()
        logger.info("Started worker process %d in slot %d", pid, slot.index)
        return pid

    def _become_child(self, parent: int, ready_fd: int, slot_index: int,
                      health_entry: int | None = None) -> None:
        """Runs in the child: never returns."""
        status = 1
        try:
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGCHLD])
            for fd in (self._read_fd, self._write_fd, *self._ready_fds.values()):
                os.close(fd)
            for number in HANDLED_SIGNALS:
                signal.signal(number, signal.SIG_DFL)
            signal.signal(signal.SIGUSR1, signal.SIG_IGN)  # rolling restarts are the parent's
            _die_with_parent(parent)
            if self.health is not None and health_entry is not None:
                self.health.in_child(health_entry)
            os.set_blocking(ready_fd, False)
            # A copy: the parent's config takes no hooks. The slot offsets the metrics port.
            config = self.config.replace(process_slot=slot_index)
            config.on("heartbeat", lambda: _say_ready(ready_fd))
            status = self.child_main(config, self.quiet) or 0
        except BaseException:
            logger.exception("Worker process %d failed", os.getpid())
        finally:
            stop_logging()
            logging.shutdown()
            os._exit(status)

    # --- watching -----------------------------------------------------------------------

    def reap(self) -> None:
        for slot in self.slots:
            for pid in list(slot.old_pids):
                if (status := self._exited(pid)) is not None:
                    slot.old_pids.remove(pid)
                    # Say how it ended: a clean exit 0 after TERM, or the SIGKILL of a
                    # child that ignored it, is the one thing to check after a restart.
                    logger.info("Replaced worker process %d (slot %d) exited with %s", pid,
                                slot.index, status)
            if slot.pid and (status := self._exited(slot.pid)) is not None:
                logger.warning("Worker process %d (slot %d) exited with %s after %.1f s",
                               slot.pid, slot.index, status, time.monotonic() - slot.started)
                was_ready, slot.pid, slot.ready = slot.ready, None, False
                self._schedule_restart(slot, was_ready)

    def _exited(self, pid: int) -> str | None:
        """Reap one known pid (never -1); a description of how it ended, or None.

        Its readiness pipe is read first (a child may register and die within one tick)
        and then closed.
        """
        try:
            reaped, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            reaped, status = pid, None
        if reaped == 0:
            return None
        self._read_readiness(pid)
        self._close_readiness(pid)
        if self.health is not None:
            self.health.child_gone(pid)
        if status is None:
            return "an unknown status (already reaped)"
        if os.WIFSIGNALED(status):
            return f"signal {signal.Signals(os.WTERMSIG(status)).name}"
        return f"exit status {os.WEXITSTATUS(status)}"

    def _schedule_restart(self, slot: Slot, was_ready: bool) -> None:
        """A child that died serving (killed, OOM, a crash mid-job) is replaced at once:
        every moment without it is lost capacity, and back-off would leave no child at
        all under repeated kills. Only one that died booting is backed off, 1 s doubling
        to 30 s, since its replacement would most likely die the same way."""
        if was_ready:
            slot.backoff_s, slot.restart_at = BACKOFF_START_S, 0.0
            logger.info("Restarting slot %d now", slot.index)
            return
        slot.restart_at = time.monotonic() + slot.backoff_s
        logger.info("Restarting slot %d in %.0f s (it died before it was serving)",
                    slot.index, slot.backoff_s)
        slot.backoff_s = min(slot.backoff_s * 2, BACKOFF_MAX_S)

    def respawn(self) -> None:
        now = time.monotonic()
        for slot in self.slots:
            if slot.pid is None and now >= slot.restart_at:
                self.fork(slot)

    def check_memory(self) -> None:
        if self.max_memory_bytes is None:
            return
        now = time.monotonic()
        if now - self._last_memory_check < MEMORY_CHECK_INTERVAL_S:
            return
        self._last_memory_check = now
        for slot in self.slots:
            rss = slot.pid and resident_bytes(slot.pid)
            if rss and rss > self.max_memory_bytes and not self.rolling.busy_with(slot):
                logger.warning("Worker process %d uses %.0f MB, over the %.0f MB limit; "
                               "replacing it", slot.pid, rss / 2**20,
                               self.max_memory_bytes / 2**20)
                self.rolling.request(slot)

    # --- stopping -----------------------------------------------------------------------

    def drain(self) -> int:
        """Relay TERM (again every second), SIGKILL after timeout + grace, reap all."""
        deadline = time.monotonic() + self.config.shutdown_timeout_s + SHUTDOWN_GRACE_S
        next_relay = 0.0
        while self.child_pids():
            now = time.monotonic()
            if now >= deadline:
                for pid in self.child_pids():
                    logger.warning("Worker process %d still running; SIGKILL", pid)
                    _kill(pid, signal.SIGKILL)
                self._reap_killed()
                break
            if now >= next_relay:
                self.relay(signal.SIGTERM)
                next_relay = now + RELAY_INTERVAL_S
            self._wait_tick()
            self.pending.clear()
            for slot in self.slots:
                slot.old_pids = [p for p in slot.old_pids if self._exited(p) is None]
                if slot.pid and self._exited(slot.pid) is not None:
                    slot.pid = None
        logger.info("Supervisor %d: every worker process has stopped", os.getpid())
        if self.health is not None:
            self.health.stop()
        return 0

    def _reap_killed(self) -> None:
        for _ in range(25):
            for slot in self.slots:
                slot.old_pids = [p for p in slot.old_pids if self._exited(p) is None]
                if slot.pid and self._exited(slot.pid) is not None:
                    slot.pid = None
            if not self.child_pids():
                return
            time.sleep(0.01)


def _say_ready(fd: int) -> None:
    """In the child, on each registration: tell the parent (gone parent or full pipe: no
    one to tell, or it has been told)."""
    try:
        os.write(fd, b"1")
    except OSError:
        pass


def _kill(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass


def resident_bytes(pid: int) -> int:
    """Resident memory of a process from /proc (Linux); 0 where unavailable."""
    try:
        with open(f"/proc/{pid}/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _die_with_parent(parent: int) -> TimerLoop:
    """A child must not outlive its supervisor: the kernel's parent-death signal where
    there is one, and a watchdog loop everywhere."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:  # the parent died before prctl took effect
        os.kill(os.getpid(), signal.SIGTERM)
    watch = OrphanWatch(parent)
    watch.loop.start()
    return watch.loop


class OrphanWatch:
    """TERMs this process once its parent is gone (re-parented: a new ppid)."""

    def __init__(self, parent: int, interval_s: float = ORPHAN_CHECK_INTERVAL_S):
        self.parent = parent
        self.loop = TimerLoop("wurk-orphan-watch", interval_s, self.check)

    def check(self) -> None:
        if os.getppid() == self.parent:
            return
        logger.warning("Supervisor %d is gone; stopping", self.parent)
        self.loop.terminate()  # one TERM: the worker's own shutdown takes it from here
        os.kill(os.getpid(), signal.SIGTERM)
