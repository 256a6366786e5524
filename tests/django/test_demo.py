"""`make demo`'s script: it starts a worker and the web server, feeds them jobs, and
stops everything it started however it is stopped (Ctrl-C, TERM, a closed terminal)."""

import os
import signal
import subprocess
import sys
import urllib.request

import pytest

from tests.support.redis_server import free_port
from tests.support.workers import ROOT, alive, children, wait_until

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP],
                         ids=["INT", "TERM", "HUP"])
def test_the_demo_runs_jobs_and_stops_everything_it_started(redis_url, tmp_path, signum):
    port = free_port()
    env = {**os.environ, "WURK_REDIS_URL": redis_url, "DEMO_PORT": str(port),
           "WURK_EXAMPLE_DB": str(tmp_path / "demo.sqlite3")}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    log = open(tmp_path / "demo.log", "wb")
    demo = subprocess.Popen([sys.executable, str(ROOT / "example_project" / "demo.py")],
                            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    started: list[int] = []
    try:
        wait_until(lambda: " INFO: done" in (tmp_path / "demo.log").read_text()
                   or demo.poll() is not None, 60, 0.1, "the demo's worker to finish a job")
        assert demo.poll() is None, (tmp_path / "demo.log").read_text()
        page = wait_until(lambda: _get(f"http://127.0.0.1:{port}/admin/login/"), 30, 0.1,
                          "the demo's web server")
        assert b"Django" in page
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
        log.close()
    output = (tmp_path / "demo.log").read_text()
    assert "Stopping the demo..." in output


def _get(url: str) -> bytes | None:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.read()
    except OSError:
        return None
