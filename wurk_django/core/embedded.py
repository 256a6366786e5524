"""Embedded mode: a small worker running in threads of a host process (a web server).

A web server, for instance, calls `configure_embed(config).run()` at start and
`stop()` at exit. No OS signal handlers are installed (the host owns its signals) and
remote signals are ignored; keep the concurrency small, as jobs share the host's GIL.
"""

import logging
import threading
import time
from typing import Any

from .config import Config
from .errors import ConfigurationError
from .launcher import Launcher
from .runner import check_redis

logger = logging.getLogger("wurk")

EMBEDDED_CONCURRENCY = 2
# Gives the processor threads time to reach their first fetch before run() returns.
STARTUP_PAUSE_S = 0.2


class Embedded:
    """One embedded worker: `run()` starts it, `quiet()` stops fetching, `stop()` ends it."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.launcher: Launcher | None = None
        self._lock = threading.Lock()

    def run(self) -> None:
        """Check Redis, fire `startup`, start the launcher; undo it all if any step fails.

        Raises:
            RedisUnavailableError: Redis cannot be reached.
            ConfigurationError: the config is already in use, or Redis is too old.
        """
        with self._lock:
            if self.launcher is not None or self.config.sealed:
                raise ConfigurationError("this embedded worker's config is already in use "
                                         "by a launcher; call configure_embed() again")
            launcher = Launcher(self.config)
            launcher.connection.ping()
            check_redis(launcher)
            self.config.fire_event("startup", reraise=True)
            self.launcher = launcher
            try:
                launcher.run()
                time.sleep(STARTUP_PAUSE_S)
            except BaseException:
                # Half a worker must not linger: its heartbeat would advertise a
                # process that runs nothing, and its threads would fetch jobs.
                self.launcher = None
                _stop_quietly(launcher)
                raise
        logger.info("Wurk running embedded: %s, %d threads, total process thread count %d",
                    launcher.identity, self.config.total_concurrency, threading.active_count())

    def quiet(self) -> None:
        """Stop fetching new jobs; running ones finish."""
        if self.launcher is not None:
            self.launcher.quiet()

    def stop(self) -> None:
        """Graceful stop, as TERM gives a worker: stop fetching, let running jobs finish
        within the shutdown timeout, push back the rest. A second call does nothing."""
        with self._lock:
            launcher, self.launcher = self.launcher, None
        if launcher is not None and not launcher.stopping:
            launcher.stop()


def _stop_quietly(launcher: Launcher) -> None:
    try:
        launcher.stop()
    except Exception:
        logger.exception("Could not stop a partly started embedded worker")


def configure_embed(config: Config, **overrides: Any) -> Embedded:
    """An embedded worker for `config`: concurrency 2 unless `overrides` say otherwise.

    Overrides are Config fields (`concurrency=4`, `queues=[...]`). The worker runs a
    copy of `config`: register hooks on `config` before this call, or on
    `Embedded.config` before `run()`.

    Raises:
        ConfigurationError: `config` is in use by a running launcher.
    """
    if config.sealed:
        raise ConfigurationError("configure_embed() needs a config that no launcher is "
                                 "running with; build a new Config")
    options = {"concurrency": EMBEDDED_CONCURRENCY, **overrides, "embedded": True}
    return Embedded(config.replace(**options))
