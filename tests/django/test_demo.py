"""`make demo`'s script: it starts a worker and the web server, feeds them jobs, keeps
their output in log files so the banner stays the last thing printed, refuses a port in
use, and stops everything it started however it is stopped (Ctrl-C, TERM, a closed
terminal)."""

import os
import signal
import socket
import subprocess
import sys
import urllib.request

import pytest

from tests.support.redis_server import free_port
from tests.support.workers import ROOT, alive, children, wait_until
from wurk_django.core import keys

pytestmark = pytest.mark.slow


def demo_env(redis_url, tmp_path, port: int) -> dict:
    env = {**os.environ, "WURK_REDIS_URL": redis_url, "DEMO_PORT": str(port),
           "WURK_EXAMPLE_DB": str(tmp_path / "demo.sqlite3"),
           "DEMO_LOG_DIR": str(tmp_path / "logs")}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    return env


def start_demo(env: dict, tmp_path) -> subprocess.Popen:
    with open(tmp_path / "demo.log", "wb") as log:
        return subprocess.Popen([sys.executable, str(ROOT / "example_project" / "demo.py")],
                                cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP],
                         ids=["INT", "TERM", "HUP"])
def test_the_demo_runs_jobs_and_stops_everything_it_started(redis_url, tmp_path, signum):
    port = free_port()
    demo = start_demo(demo_env(redis_url, tmp_path, port), tmp_path)
    output = tmp_path / "demo.log"
    worker_log = tmp_path / "logs" / "worker.log"
    started: list[int] = []
    try:
        wait_until(lambda: demo.poll() is not None or (
            worker_log.exists() and worker_log.read_text().count(" INFO: done") >= 3),
            60, 0.1, "the demo's worker to finish a few jobs")
        assert demo.poll() is None, output.read_text()
        page = wait_until(lambda: _get(f"http://127.0.0.1:{port}/admin/login/"), 30, 0.1,
                          "the demo's web server")
        assert b"Django" in page
        # The banner is the last thing printed: job lines went to the worker's log.
        printed = output.read_text()
        assert printed.rstrip().endswith("Press Ctrl-C to stop."), printed
        assert f"Dashboard: http://127.0.0.1:{port}/admin/wurk/" in printed
        assert " INFO: " not in printed
        started += children(demo.pid)
        assert len(started) == 2  # the worker and the web server
        demo.send_signal(signum)
        assert demo.wait(60) == 0
        assert not [pid for pid in started if alive(pid)]
    finally:
        if demo.poll() is None:
            demo.kill()
        for pid in {*started, *children(demo.pid)}:
            if alive(pid):  # never leave a worker or a server behind a failed test
                os.kill(pid, signal.SIGKILL)
    assert "Stopping the demo..." in output.read_text()


def test_a_port_in_use_is_refused_with_a_non_zero_exit(redis_url, redis_client, tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        demo = start_demo(demo_env(redis_url, tmp_path, port), tmp_path)
        try:
            status = demo.wait(60)
        finally:
            if demo.poll() is None:
                demo.kill()
            for pid in children(demo.pid):
                os.kill(pid, signal.SIGKILL)
    output = (tmp_path / "demo.log").read_text()
    assert status != 0, output
    assert f"port {port} on 127.0.0.1 is taken" in output and "DEMO_PORT=" in output
    assert "Wurk demo running" not in output
    assert redis_client.smembers(keys.PROCESSES) == set()  # no worker was started


def _get(url: str) -> bytes | None:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.read()
    except OSError:
        return None
