"""A worker process's metrics port (`--metrics-port`): prometheus_client's HTTP server for
the process's own job counters, bound to a configurable address.

Under a supervisor each child listens on the port plus its slot number. During a rolling
restart the child being replaced holds its port until it stops, so binding retries each
second instead of failing the new child.
"""

import errno
import logging
import threading

from .prometheus import process_metrics, require

logger = logging.getLogger("wurk")

BIND_RETRY_S = 1.0


class MetricsPort:
    """Serves `/metrics` (any path answers) for this process until `stop()`."""

    def __init__(self, address: str, port: int, busy, concurrency: int):
        self.address = address
        self.port = port
        self.metrics = process_metrics()
        self.metrics.watch(busy, concurrency)
        self.server = None
        self.bound = threading.Event()
        self._done = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if not self._try_bind(first=True):
            self._thread = threading.Thread(target=self._bind_loop, name="wurk-metrics-port",
                                            daemon=True)
            self._thread.start()

    def _bind_loop(self) -> None:
        while not self._done.wait(BIND_RETRY_S):
            if self._try_bind(first=False):
                return

    def _try_bind(self, *, first: bool) -> bool:
        prometheus_client = require("metrics_port")
        try:
            self.server, _ = prometheus_client.start_http_server(
                self.port, addr=self.address, registry=self.metrics.registry)
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                logger.error("Metrics port %s:%d cannot be opened: %s", self.address,
                             self.port, exc)
                return True  # not a port still held by a process we replace: give up
            if first:
                logger.warning("Metrics port %s:%d is in use; retrying every %.0f s",
                               self.address, self.port, BIND_RETRY_S)
            return False
        if self._done.is_set():  # stopped while this bind was under way
            self._close()
            return True
        logger.info("Serving metrics on http://%s:%d/metrics", self.address, self.port)
        self.bound.set()
        return True

    def stop(self) -> None:
        """Close the port (first thing at shutdown, so a replacement can take it)."""
        self._done.set()
        if self._thread is not None:
            self._thread.join(BIND_RETRY_S * 2)
        self._close()

    def _close(self) -> None:
        server, self.server = self.server, None
        if server is not None:
            server.shutdown()
            server.server_close()
