"""Runs a standalone worker process: waits for Redis, starts the launcher, obeys signals."""

import logging
import os
import select
import signal
import sys

from .errors import ConfigurationError
from .joblog import reopen_log_files
from .launcher import Launcher
from .redis import REDIS_ERRORS
from .version import VERSION

logger = logging.getLogger("wurk")

MIN_REDIS_VERSION = (6, 2)
REDIS_WAIT_MAX_S = 30.0
OS_SIGNALS = ("TERM", "INT", "TSTP", "TTIN", "USR2", "INFO")


class SignalPipe:
    """The self-pipe: handlers only record a name and write a byte; the main loop acts."""

    def __init__(self, launcher: Launcher):
        self.launcher = launcher
        self.read_fd, self.write_fd = os.pipe()
        os.set_blocking(self.write_fd, False)
        launcher.signal_listeners.append(self.wake)
        self.installed: list[int] = []

    def install(self) -> None:
        for name in OS_SIGNALS:
            number = getattr(signal, f"SIG{name}", None)
            if number is not None:
                signal.signal(number, self._handler)
                self.installed.append(number)
        # A supervisor forks its children with these blocked; deliver what is pending now
        # that our handlers are in place.
        signal.pthread_sigmask(signal.SIG_UNBLOCK, self.installed)

    def _handler(self, number, frame) -> None:
        name = signal.Signals(number).name[3:]
        if name == "INT" and self.launcher.stopping:
            # A second Ctrl-C while stopping: stop waiting for jobs. A repeated TERM does
            # not force: supervisors re-send TERM while their children drain.
            self.launcher.force()
        self.launcher.signal(name)

    def wake(self) -> None:
        try:
            os.write(self.write_fd, b"!")
        except BlockingIOError:
            pass  # the pipe is full, so the main loop is already due to wake

    def wait(self, timeout_s: float | None) -> None:
        ready, _, _ = select.select([self.read_fd], [], [], timeout_s)
        if ready:
            os.read(self.read_fd, 4096)

    def close(self) -> None:
        for number in self.installed:
            signal.signal(number, signal.SIG_DFL)
        os.close(self.read_fd)
        os.close(self.write_fd)


def banner(config, launcher: Launcher) -> str:
    def queues(capsule) -> str:
        return ", ".join(f"{n},{w}" if w else n for n, w in capsule.queues)

    capsules = "; ".join(f"{c.name}: {c.concurrency} threads on {queues(c)} ({c.mode})"
                         for c in config.capsules_)
    return (f"Wurk {VERSION} starting: {launcher.identity}, pid {os.getpid()}; {capsules}; "
            f"fetch {config.fetch}; Redis {launcher.connection.masked_url}")


def wait_for_redis(launcher: Launcher, pipe: SignalPipe) -> bool:
    """Ping until Redis answers, backing off to 30 s; False if told to stop meanwhile."""
    delay_s = 1.0
    while True:
        try:
            launcher.connection.ping()
            return True
        except REDIS_ERRORS as exc:
            logger.warning("Redis at %s is unreachable (%s); retrying in %.0f s",
                           launcher.connection.masked_url, exc, delay_s)
        pipe.wait(delay_s)
        if any(name in ("TERM", "INT") for name in launcher.pending_signals):
            return False
        delay_s = min(delay_s * 2, REDIS_WAIT_MAX_S)


def check_redis(launcher: Launcher) -> None:
    """Refuse a Redis older than 6.2; warn when eviction could drop jobs."""
    connection = launcher.connection
    version = connection.server_version()
    if version < MIN_REDIS_VERSION:
        raise ConfigurationError(
            f"Wurk needs Redis 6.2 or newer (LMOVE, ZRANGE BYSCORE); {connection.masked_url} "
            f"runs {'.'.join(map(str, version))}")
    try:
        policy = connection.config_get("maxmemory-policy")
    except REDIS_ERRORS:
        return  # managed services often forbid CONFIG
    if policy not in (None, b"noeviction"):
        logger.warning("Redis maxmemory-policy is %s; use noeviction or Redis may drop jobs",
                       policy.decode())


def run(config, *, install_signals: bool = True, start_quiet: bool = False) -> int:
    """Run a worker in this process until TERM/INT; return the exit status.

    `start_quiet` boots without fetching (a supervisor's TSTP is sticky for new children).
    """
    launcher = Launcher(config)
    pipe = SignalPipe(launcher)
    if install_signals:
        pipe.install()
    try:
        logger.info(banner(config, launcher))
        if not wait_for_redis(launcher, pipe):
            return 0
        check_redis(launcher)
        config.fire_event("startup", reraise=True)
        if start_quiet:
            launcher.quiet()
        launcher.run()
        while not launcher.stopped.is_set():
            pipe.wait(1.0)
            while launcher.pending_signals:
                handle_signal(launcher, launcher.pending_signals.popleft())
        return 0
    finally:
        pipe.close()


def handle_signal(launcher: Launcher, name: str) -> None:
    if name in ("TERM", "INT"):
        if not launcher.stopping:
            logger.info("Received %s, shutting down (up to %s s)", name,
                        launcher.config.shutdown_timeout_s)
            launcher.stop()
            logger.info("Bye!")
    elif name == "TSTP":
        logger.info("Received TSTP, no longer accepting new work")
        launcher.quiet()
    elif name in ("TTIN", "INFO"):
        launcher.dump_threads()
    elif name == "USR2":
        reopened = reopen_log_files()
        logger.info("Received USR2; reopened %d log file%s", reopened,
                    "" if reopened == 1 else "s")
    else:
        logger.warning("Ignoring unknown signal %s", name)
    sys.stdout.flush()


def serve(config, *, processes: int = 1, max_memory_mb: float | None = None,
          before_fork=(), sizing_note: str = "") -> int:
    """Run one worker here, or a supervisor with `processes` forked workers;
    `sizing_note` says how the count was reached ("auto": from which CPUs)."""
    if processes < 1:
        raise ConfigurationError(f"processes must be at least 1, got {processes}")
    if processes == 1 and not max_memory_mb:
        if sizing_note:
            logger.info("One worker process (%s)", sizing_note)
        return run(config)
    from .supervisor import Supervisor

    def child_main(child_config, quiet: bool) -> int:
        return run(child_config, start_quiet=quiet)

    return Supervisor(config, processes, child_main, max_memory_mb=max_memory_mb,
                      before_fork=before_fork, sizing_note=sizing_note).run()
