"""Test hosts on this machine, for tests of what happens across machines: each host a
network namespace with its own address on a private bridge, its own hostname (UTS) and
pids (PID namespace). The test makes them, and removes them even when it fails."""

import ipaddress
import os
import random
import re
import secrets
import shutil
import signal
import subprocess
from dataclasses import dataclass

from tests.support.workers import wait_until

# Kernel interface names hold at most 15 characters: "wurkbr" / "wurkv" + 6 hex + index.
_IPV4 = re.compile(r"\b(\d{1,3}(?:\.\d{1,3}){3}(?:/\d{1,2})?)\b")
TOOLS = (("ip", "iproute2"), ("unshare", "util-linux"))


def _run(*argv: str, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run(argv, capture_output=True, text=True)
    if check and result.returncode:
        raise RuntimeError(f"`{' '.join(argv)}` failed ({result.returncode}): "
                           f"{result.stderr.strip()}")
    return result


def unavailable_reason() -> str | None:
    """Why network and UTS namespaces cannot be made here, or None if they can (tried)."""
    if os.geteuid() != 0:
        return "making network namespaces needs root (ip netns add); run the tests as root"
    missing = [f"{tool} ({package})" for tool, package in TOOLS if not shutil.which(tool)]
    if missing:
        return f"no {', '.join(missing)}: apt-get install iproute2 util-linux"
    probe = f"wurk-probe-{secrets.token_hex(4)}"
    made = _run("ip", "netns", "add", probe, check=False)
    if made.returncode:
        return f"`ip netns add` is refused here: {made.stderr.strip()}"
    try:
        unshared = _run("ip", "netns", "exec", probe, "unshare", "--uts", "--pid", "--fork",
                        "--mount-proc", "--", "hostname", "probe", check=False)
        if unshared.returncode:
            return f"`unshare --uts --pid` is refused here: {unshared.stderr.strip()}"
    finally:
        _run("ip", "netns", "del", probe, check=False)
    return None


def _networks_in_use() -> list[ipaddress.IPv4Network]:
    """Every IPv4 network this machine has an address or a route in (any table)."""
    text = (_run("ip", "-4", "-o", "addr", "show").stdout
            + _run("ip", "-4", "route", "show", "table", "all").stdout)
    networks = []
    for match in _IPV4.findall(text):
        try:
            network = ipaddress.IPv4Network(match, strict=False)
        except ValueError:
            continue
        if network.prefixlen:  # a default route overlaps everything; it is no clash
            networks.append(network)
    return networks


def pick_subnet() -> ipaddress.IPv4Network:
    """A random 10.x.y.0/24 that nothing on this machine uses, so runs cannot clash."""
    used = _networks_in_use()
    for _ in range(100):
        subnet = ipaddress.IPv4Network(
            f"10.{random.randint(64, 254)}.{random.randint(0, 255)}.0/24")
        if not any(subnet.overlaps(network) for network in used):
            return subnet
    raise RuntimeError("found no free 10.x.y.0/24 for the test hosts")


@dataclass
class Host:
    """One test host: argv run through `command()` is in its namespaces."""

    name: str
    namespace: str
    address: str

    def exec(self, *argv: str) -> subprocess.CompletedProcess:
        return _run("ip", "netns", "exec", self.namespace, *argv)

    def command(self, *argv: str) -> list[str]:
        """argv in this host's network namespace, under its own hostname, as PID 1 of a
        PID namespace of its own (as in a container), so pids mean what they mean on
        another machine and may equal another host's. Popen's pid is `unshare`'s, which
        takes the whole namespace down with it if killed."""
        return ["ip", "netns", "exec", self.namespace,
                "unshare", "--uts", "--pid", "--fork", "--kill-child", "--mount-proc", "--",
                "sh", "-c", 'hostname "$0" && exec "$@"', self.name, *argv]

    def pids(self) -> set[int]:
        """The live processes in this host (a dead one has left its namespace)."""
        out = _run("ip", "netns", "pids", self.namespace, check=False).stdout
        return {int(pid) for pid in out.split()}

    def kill_all(self, while_frozen=None) -> set[int]:
        """SIGKILL every process of this host at once, as a power cut would.

        All are stopped first (again until no new one shows up, since one could fork
        meanwhile), so none acts after another died; `while_frozen()` then sees the
        host's last state. Returns the killed pids once they are gone.
        """
        stopped: set[int] = set()
        while fresh := self.pids() - stopped:
            for pid in fresh:
                _signal(pid, signal.SIGSTOP)
            stopped |= fresh
        try:
            if while_frozen is not None:
                while_frozen()
        finally:
            for pid in stopped:
                _signal(pid, signal.SIGKILL)
            wait_until(lambda: not self.pids(), 10, 0.02, f"every process in {self.name} to die")
        return stopped


def _signal(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass


class HostNetwork:
    """Hosts on one bridge in the root namespace; the bridge's own address (`gateway`)
    is where a server for all of them listens. Names carry a random run id."""

    def __init__(self):
        self.run_id = secrets.token_hex(3)
        self.subnet = pick_subnet()
        self.gateway = str(self.subnet.network_address + 1)
        self.bridge = f"wurkbr{self.run_id}"
        self.hosts: list[Host] = []
        self._bridge_made = False

    def __enter__(self) -> "HostNetwork":
        try:
            _run("ip", "link", "add", self.bridge, "type", "bridge")
            self._bridge_made = True
            _run("ip", "addr", "add", f"{self.gateway}/{self.subnet.prefixlen}",
                 "dev", self.bridge)
            _run("ip", "link", "set", self.bridge, "up")
        except BaseException:
            self.cleanup()
            raise
        return self

    def __exit__(self, *exc_info) -> None:
        self.cleanup()

    def add_host(self, name: str) -> Host:
        """A new host named `name` (its hostname), with an address on the bridge."""
        index = len(self.hosts) + 1
        address = str(self.subnet.network_address + 10 + index)
        host = Host(name, f"wurk-{name}-{self.run_id}", address)
        self.hosts.append(host)  # first, so cleanup also removes a half-made host
        outer, inner = f"wurkv{self.run_id}{index}", f"wurkp{self.run_id}{index}"
        _run("ip", "netns", "add", host.namespace)
        _run("ip", "link", "add", outer, "type", "veth", "peer", "name", inner,
             "netns", host.namespace)
        _run("ip", "link", "set", outer, "master", self.bridge, "up")
        host.exec("ip", "addr", "add", f"{address}/{self.subnet.prefixlen}", "dev", inner)
        host.exec("ip", "link", "set", inner, "up")
        host.exec("ip", "link", "set", "lo", "up")
        return host

    def cleanup(self) -> None:
        """Kill what runs in the hosts, delete them (their veths go with them), then the
        bridge. Every step is tried; the first failure is raised at the end."""
        failures = []
        for host in self.hosts:
            try:
                host.kill_all()
            except Exception as exc:  # noqa: BLE001 - every step is tried; raised at the end
                failures.append(exc)
            removed = _run("ip", "netns", "del", host.namespace, check=False)
            if removed.returncode and "No such file" not in removed.stderr:
                failures.append(RuntimeError(f"ip netns del {host.namespace}: "
                                             f"{removed.stderr.strip()}"))
        self.hosts = []
        if self._bridge_made:
            removed = _run("ip", "link", "del", self.bridge, check=False)
            if removed.returncode:
                failures.append(RuntimeError(f"ip link del {self.bridge}: "
                                             f"{removed.stderr.strip()}"))
            self._bridge_made = False
        if failures:
            raise failures[0]
