"""`--health-port`: real worker processes answering GET /live and GET /ready, with their
Redis SIGSTOPped (readiness fails first, liveness only once the heartbeat is overdue),
quieted, and as a supervisor answering for its children, one of them wedged."""

import json
import os
import signal
import socket
import urllib.error
import urllib.request

import pytest

from tests.support.redis_server import RedisServer, free_port
from tests.support.workers import children, wait_until

pytestmark = pytest.mark.slow

FAST = ("-c", "2", "--heartbeat-interval", "1", "--poll-interval", "1", "-t", "2")


def probe(port: int, path: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as answer:
        return answer.code, json.loads(answer.read())
    except (TimeoutError, urllib.error.URLError, ConnectionError):
        return 0, {}


def answering(port: int, path: str, status: int):
    return lambda: probe(port, path)[0] == status


@pytest.fixture
def own_redis():
    """A redis-server of the test's own, so it can be frozen with SIGSTOP."""
    server = RedisServer().start()
    yield server
    if server.process is not None:
        server.process.send_signal(signal.SIGCONT)
    server.cleanup()


def test_a_frozen_redis_fails_readiness_first_and_liveness_once_the_beat_is_overdue(
        start_worker, own_redis):
    port = free_port()
    start_worker(*FAST, "--health-port", str(port), redis=own_redis.url)
    wait_until(answering(port, "/ready", 200), 20, 0.05, "the worker ready")
    assert probe(port, "/live") == (200, {"status": "ok", "heartbeat": "ok"})

    own_redis.process.send_signal(signal.SIGSTOP)
    wait_until(answering(port, "/ready", 503), 30, 0.05, "readiness to fail")
    status, body = probe(port, "/ready")
    assert (status, body["reasons"]) == (503, ["redis unavailable"])
    assert probe(port, "/live")[0] == 200, "liveness failed as soon as readiness did"
    wait_until(answering(port, "/live", 503), 60, 0.1, "liveness to fail")
    assert probe(port, "/live")[1] == {"status": "failing", "heartbeat": "overdue"}

    own_redis.process.send_signal(signal.SIGCONT)
    wait_until(answering(port, "/live", 200), 30, 0.05, "liveness back")
    wait_until(answering(port, "/ready", 200), 30, 0.05, "readiness back")


def test_a_quiet_worker_is_live_but_not_ready(start_worker, own_redis):
    port = free_port()
    worker = start_worker(*FAST, "--health-port", str(port), redis=own_redis.url)
    wait_until(answering(port, "/ready", 200), 20, 0.05, "the worker ready")
    worker.send(signal.SIGTSTP)
    wait_until(answering(port, "/ready", 503), 10, 0.05, "readiness to fail")
    assert probe(port, "/ready")[1] == {"status": "not ready", "reasons": ["quiet"]}
    assert probe(port, "/live")[0] == 200
    assert probe(port, "/metrics")[0] == 404


def test_a_supervisor_answers_for_its_children_and_sees_a_wedged_one(start_worker, own_redis):
    port = free_port()
    worker = start_worker(*FAST, "-p", "2", "--health-port", str(port), redis=own_redis.url)
    wait_until(answering(port, "/ready", 200), 30, 0.05, "both children ready")
    assert probe(port, "/live") == (200, {"status": "ok", "processes": 2})
    wedged, other = sorted(wait_until(lambda: len(children(worker.pid)) == 2
                                      and children(worker.pid), 10))
    os.kill(wedged, signal.SIGSTOP)  # a child that no longer runs at all
    try:
        wait_until(answering(port, "/live", 503), 30, 0.05, "liveness to fail")
        status, body = probe(port, "/live")
        assert status == 503 and len(body["wedged_slots"]) == 1
        assert probe(port, "/ready")[0] == 503
    finally:
        os.kill(wedged, signal.SIGCONT)
    wait_until(answering(port, "/live", 200), 30, 0.05, "liveness back")
    wait_until(answering(port, "/ready", 200), 30, 0.05, "readiness back")

    os.kill(other, signal.SIGKILL)  # the supervisor replaces it; not ready meanwhile
    wait_until(lambda: other not in children(worker.pid), 10)
    wait_until(answering(port, "/ready", 200), 30, 0.05, "ready with the replacement")
    assert probe(port, "/live")[0] == 200
    worker.send(signal.SIGTERM)
    assert worker.wait(30) == 0


def test_a_health_port_in_use_fails_the_boot_with_one_clean_line(start_worker, own_redis):
    taken = socket.socket()
    taken.bind(("0.0.0.0", 0))
    taken.listen()
    try:
        worker = start_worker("--health-port", str(taken.getsockname()[1]),
                              redis=own_redis.url)
        assert worker.wait(30) == 1
        assert f"wurk: --health-port: cannot listen on 0.0.0.0:{taken.getsockname()[1]}" \
            in worker.log()
        assert "Traceback" not in worker.log()
    finally:
        taken.close()
