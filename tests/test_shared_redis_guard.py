"""The suite's guard against the machine's shared Redis on 6379: a connection there is
refused in the test process and in the workers it starts, and fails the test that made it.

This machine may really run a Redis on 6379: without the guard each connection below
would succeed, silently, against the wrong server.
"""

import errno
import os
import socket
import subprocess
import sys

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from tests.support.shared_redis_guard import LOG_VARIABLE, StrayRedisConnection
from tests.support.workers import ROOT

SHARED = [("127.0.0.1", 6379), ("::1", 6379)]


@pytest.mark.parametrize("address", SHARED, ids=["ipv4", "ipv6"])
def test_every_way_to_connect_to_6379_is_refused_and_recorded(stray_redis_guard, address):
    family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
    with socket.socket(family) as sock, pytest.raises(StrayRedisConnection, match="6379"):
        sock.connect(address)
    with socket.socket(family) as sock:
        assert sock.connect_ex(address) == errno.ECONNREFUSED
    with pytest.raises(ConnectionRefusedError, match="test guard refused"):
        socket.create_connection(address, timeout=2)
    attempts = stray_redis_guard.new_attempts()  # taken, so this test does not fail for them
    target = f"{address[0]}:6379"
    assert len(attempts) == 3 and all(f"pid={os.getpid()} {target} from" in a for a in attempts)


def test_a_redis_client_left_on_its_default_port_fails_with_the_guards_message(
        stray_redis_guard, redis_client):
    client = redis.Redis(host="localhost", socket_connect_timeout=2,  # port 6379 by default
                         retry=Retry(NoBackoff(), 0))
    with pytest.raises(redis.ConnectionError, match="test guard refused .*6379"):
        client.ping()
    assert stray_redis_guard.new_attempts()
    assert redis_client.ping()  # the suite's own server is untouched by the guard


@pytest.mark.slow
def test_a_worker_pointed_at_6379_logs_the_refusal_and_never_reaches_it(
        start_worker, stray_redis_guard):
    worker = start_worker(redis="redis://localhost:6379/0")
    worker.wait_for_log("the test guard refused a connection to 127.0.0.1:6379")
    # The worker's own report of the unreachable Redis carries the guard's reason.
    worker.wait_for_log("redis://localhost:6379/0")
    assert any("redis://localhost:6379/0" in line and "test guard refused" in line
               for line in worker.log().splitlines()), worker.log()
    worker.stop()
    attempts = stray_redis_guard.new_attempts()
    assert attempts and all(a.startswith(f"pid={worker.pid} ") for a in attempts), attempts


def test_a_test_that_swallows_the_refusal_still_fails(tmp_path):
    """The check does not rely on the error surfacing: a retry loop may swallow it."""
    test_file = tmp_path / "test_stray.py"
    test_file.write_text(
        "import socket\n\n\n"
        "def test_swallows_a_stray_connection():\n"
        "    try:\n"
        "        socket.create_connection(('127.0.0.1', 6379), timeout=2)\n"
        "    except OSError:\n"
        "        pass\n\n\n"
        "def test_an_honest_neighbour():\n"
        "    pass\n")
    env = {name: value for name, value in os.environ.items() if name != LOG_VARIABLE}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.conftest",
         "-c", str(ROOT / "pyproject.toml"), "--rootdir", str(ROOT), str(test_file)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == pytest.ExitCode.TESTS_FAILED, result.stdout + result.stderr
    assert "1 failed, 1 passed" in result.stdout, result.stdout
    assert "FAILED" in result.stdout and "test_swallows_a_stray_connection" in result.stdout
    assert "connection to the shared Redis on port 6379 during the test" in result.stdout
