"""A Redis outage is visible at --log-level warning: one line per component (fetch, ack,
heartbeat, leader election, scheduled poller) when it starts, one when it ends with how
long it really lasted; nothing per attempt."""

import os
import re
import signal
import time

import pytest
import redis

from tests.support.redis_server import RedisServer
from tests.support.workers import wait_until
from wurk_django.core import Client, Config
from wurk_django.core.redis import close_connections

pytestmark = pytest.mark.slow

# Every periodic component tries Redis at least once a second, so each meets the outage.
FAST = ("--heartbeat-interval", "0.5", "--poll-interval", "0.5", "--leader-renew", "1",
        "--leader-retry", "1")


def identity(client) -> bytes:
    [member] = client.smembers("processes")
    return member


def test_a_stopped_redis_is_reported_once_per_component_with_its_real_length(start_worker):
    server = RedisServer().start()
    client = redis.Redis.from_url(server.url)
    try:
        worker = start_worker("-c", "2", "--log-level", "warning", *FAST, redis=server.url)
        wait_until(lambda: client.scard("processes") == 1, 15, message="the worker's beat")
        # A job that finishes while Redis is stopped (and touches no Redis itself): its
        # ack fails and must be kept for later, not lost and not reported as a bug.
        Client(Config(redis_url=server.url)).push(
            {"class": "tests.core.jobs.sleep_quietly", "args": [3.0]})
        close_connections()
        wait_until(lambda: client.hget(identity(client), "busy") == b"1", 15,
                   message="the job running")

        os.kill(server.process.pid, signal.SIGSTOP)
        stopped_at = time.monotonic()
        try:
            worker.wait_for_log("Error fetching job", 30)
            worker.wait_for_log("Error acknowledging jobs", 30)
            worker.wait_for_log("heartbeat", 30)
            worker.wait_for_log("'leader election'", 30)
            worker.wait_for_log("scheduled poller: Redis is unavailable", 30)
        finally:
            os.kill(server.process.pid, signal.SIGCONT)
        stopped_for = time.monotonic() - stopped_at

        worker.wait_for_log("fetch (default): Redis is reachable again", 30)
        worker.wait_for_log("heartbeat: Redis is reachable again", 30)
        worker.wait_for_log("leader election: Redis is reachable again", 30)
        worker.wait_for_log("scheduled poller: Redis is reachable again", 30)
        log = worker.log()
        reported = float(re.search(r"fetch \(default\): Redis is reachable again after "
                                   r"([\d.]+) s", log).group(1))
        # Counted from when the failing call began, not from when it timed out: at least
        # as long as the server was stopped (before, a 10 s stop read as about 3 s).
        assert reported >= stopped_for - 0.5, (reported, stopped_for)
        assert log.count("Error fetching job") == 1
        assert log.count("Error acknowledging jobs") == 1
        assert log.count("'leader election'") == 1
        assert log.count("scheduled poller: Redis is unavailable") == 1
        assert "Processor internal error" not in log
        # The held ack reached Redis after all: the job is done, once, and not retried.
        private = list(client.scan_iter("queue:default|*"))
        wait_until(lambda: all(client.llen(k) == 0 for k in private), 15, message="the ack")
        wait_until(lambda: client.get("stat:processed") == b"1", 15, message="the stats")
        assert client.get("stat:failed") in (None, b"0")
        assert client.llen("queue:default") == client.zcard("retry") == 0
    finally:
        client.close()
        server.cleanup()
