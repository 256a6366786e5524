"""A Redis master, a replica and three Sentinels on free loopback ports, for fail-over
tests: real `redis-server` and `redis-sentinel` processes (Debian's redis-sentinel
package), removed when the test ends, even when it fails."""

import os
import shutil
import subprocess
import tempfile
import threading
import time

import pytest
import redis

from tests.support.redis_server import RedisServer, free_port
from tests.support.workers import wait_until

SERVICE = "wurkmaster"
INSTALL_HINT = ("install it with `apt-get install redis-sentinel` (`make test` does this "
                "as root)")
DOWN_AFTER_MS = 1000
FAILOVER_TIMEOUT_MS = 10_000


def sentinel_binary() -> str | None:
    return shutil.which("redis-sentinel")


def require_sentinel() -> None:
    if sentinel_binary() is None:
        pytest.skip(f"redis-sentinel is not installed; {INSTALL_HINT}")


class SentinelProcess:
    def __init__(self, master_port: int, quorum: int, password: str | None = None,
                 own_password: str | None = None):
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="wurk-sentinel-")
        self.conf = os.path.join(self.dir, "sentinel.conf")
        lines = [f"port {self.port}", "bind 127.0.0.1", f"dir {self.dir}",
                 f"sentinel monitor {SERVICE} 127.0.0.1 {master_port} {quorum}",
                 f"sentinel down-after-milliseconds {SERVICE} {DOWN_AFTER_MS}",
                 f"sentinel failover-timeout {SERVICE} {FAILOVER_TIMEOUT_MS}",
                 f"sentinel parallel-syncs {SERVICE} 1"]
        if password:  # the master's and the replica's
            lines.append(f"sentinel auth-pass {SERVICE} {password}")
        if own_password:  # the Sentinels' own, which they also use with each other
            lines += [f"requirepass {own_password}", f"sentinel sentinel-pass {own_password}"]
        with open(self.conf, "w") as conf:  # Sentinel rewrites it as it learns
            conf.write("\n".join(lines) + "\n")
        self.process = subprocess.Popen([sentinel_binary(), self.conf],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.client = redis.Redis(port=self.port, socket_timeout=2, decode_responses=True,
                                  password=own_password)

    def master(self) -> dict:
        try:
            return self.client.sentinel_master(SERVICE)
        except redis.RedisError:
            return {}

    def master_port(self) -> int | None:
        try:
            reply = self.client.sentinel_get_master_addr_by_name(SERVICE)
        except redis.RedisError:
            return None
        return int(reply[1]) if reply else None

    def stop(self) -> None:
        self.client.close()
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        shutil.rmtree(self.dir, ignore_errors=True)


class SentinelCluster:
    """`master`, `replica` (servers), `sentinels` (three), and the URL Wurk is given."""

    def __init__(self, server_args: tuple = (), password: str | None = None,
                 sentinel_password: str | None = None):
        self.password = password
        if password:  # each one needs it once it is the other's replica
            server_args = (*server_args, "--masterauth", password)
        self.master = self._locked(RedisServer(extra_args=server_args).start())
        self.replica = self._locked(RedisServer(extra_args=(
            "--replicaof", "127.0.0.1", str(self.master.port), *server_args)).start())
        self.sentinels = [SentinelProcess(self.master.port, 2, password, sentinel_password)
                          for _ in range(3)]
        self.roles = RoleWatch(self.master.port, self.replica.port, password)

    def _locked(self, server: RedisServer) -> RedisServer:
        """Set the password once the server answers (the helper that starts it pings
        without one)."""
        if self.password:
            client = redis.Redis(port=server.port)
            client.config_set("requirepass", self.password)
            client.close()
        return server

    @property
    def url(self) -> str:
        hosts = ",".join(f"127.0.0.1:{s.port}" for s in self.sentinels)
        return f"redis+sentinel://{hosts}/{SERVICE}"

    def client(self, port: int) -> redis.Redis:
        return redis.Redis(port=port, socket_timeout=5, password=self.password)

    def wait_ready(self) -> None:
        """Until the replica is in sync and every Sentinel knows it and the other two."""
        wait_until(lambda: self.client(self.replica.port).info("replication")
                   .get("master_link_status") == "up", 15, 0.05, "the replica in sync")

        def known(sentinel):
            state = sentinel.master()
            return (int(state.get("num-slaves", 0)) >= 1
                    and int(state.get("num-other-sentinels", 0)) >= 2)
        wait_until(lambda: all(known(s) for s in self.sentinels), 30, 0.1,
                   "every Sentinel to know the replica and each other")

    def fail_over(self) -> float:
        """`SENTINEL FAILOVER` on the first Sentinel; the monotonic time it was sent."""
        self.roles.start()
        sent = time.monotonic()
        self.sentinels[0].client.sentinel_failover(SERVICE)
        return sent

    def wait_switched(self, timeout_s: float = 30) -> float:
        """Until every Sentinel names the replica as the master; the monotonic time seen."""
        wait_until(lambda: all(s.master_port() == self.replica.port for s in self.sentinels),
                   timeout_s, 0.01, "every Sentinel to name the new master")
        return time.monotonic()

    def stop(self) -> None:
        self.roles.stop()
        for sentinel in self.sentinels:
            sentinel.stop()
        self.replica.cleanup()
        self.master.cleanup()


class RoleWatch:
    """Polls ROLE on both servers every few ms from a thread: when the replica became a
    master (`promoted`) and when the old master became a replica (`demoted`)."""

    POLL_S = 0.005

    def __init__(self, old_port: int, new_port: int, password: str | None = None):
        self.ports = {"old": old_port, "new": new_port}
        self.password = password
        self.promoted: float | None = None
        self.demoted: float | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="role-watch", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _role(self, client) -> str | None:
        try:
            return client.execute_command("ROLE")[0].decode()
        except redis.RedisError:
            return None

    def _run(self) -> None:
        old, new = (redis.Redis(port=port, socket_timeout=1, password=self.password)
                    for port in self.ports.values())
        try:
            while not self._stop.wait(self.POLL_S):
                if self.promoted is None and self._role(new) == "master":
                    self.promoted = time.monotonic()
                if self.demoted is None and self._role(old) == "slave":
                    self.demoted = time.monotonic()
                if self.promoted and self.demoted:
                    return
        finally:
            old.close()
            new.close()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.ident is not None and self._thread.is_alive():
            self._thread.join(5)
