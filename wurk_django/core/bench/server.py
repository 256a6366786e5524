"""A private redis-server on a free loopback port, and the measuring side's readings."""

import shutil
import socket
import subprocess
import tempfile
import time

import redis

from ..embedded_redis import redis_server_binary
from .targets import die_with_parent

START_TIMEOUT_S = 10.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class PrivateRedis:
    """One redis-server with nothing on disk; `start()` returns once it answers PING."""

    def __init__(self):
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="wurk-bench-redis-")
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> "PrivateRedis":
        self.process = subprocess.Popen(
            [redis_server_binary(), "--port", str(self.port), "--bind", "127.0.0.1",
             "--save", "", "--appendonly", "no", "--dir", self.dir],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=die_with_parent)
        client = redis.Redis(port=self.port, socket_connect_timeout=0.2)
        deadline = time.monotonic() + START_TIMEOUT_S
        try:
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
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def command_calls(info: dict) -> dict[str, int]:
    """`INFO all`'s commandstats as {command: calls}."""
    return {name[len("cmdstat_"):]: value["calls"] for name, value in info.items()
            if name.startswith("cmdstat_")}


def redis_costs(before: dict, after: dict, own_round_trips: int, jobs: int) -> dict:
    """Commands and round trips per job between two `INFO all` readings.

    Taken away: the bench's own counter reads (GET) and the first INFO, and each job's
    bookkeeping INCR (one command, one round trip), so what is left is the system's.
    `total_writes_processed` counts reply writes: one per round trip of any client.
    """
    calls_before, calls_after = command_calls(before), command_calls(after)
    calls = {name: count - calls_before.get(name, 0) for name, count in calls_after.items()}
    calls.pop("info", None)
    calls["get"] = calls.get("get", 0) - own_round_trips
    calls["incr"] = calls.get("incr", 0) - jobs
    calls = {name: count for name, count in calls.items() if count > 0}
    writes = after["total_writes_processed"] - before["total_writes_processed"]
    round_trips = writes - own_round_trips - 1 - jobs
    per_job = max(jobs, 1)
    return {"commands_per_job": sum(calls.values()) / per_job,
            "round_trips_per_job": round_trips / per_job,
            "by_command": {name: count / per_job for name, count in sorted(calls.items())}}
