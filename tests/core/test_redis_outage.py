"""Redis unreachable at start or lost mid-run: the worker logs, backs off and carries on."""

import json

import pytest
import redis

from tests.support.redis_server import RedisServer, free_port
from tests.support.workers import wait_until
from wurk_django.core import Client, Config
from wurk_django.core.redis import close_connections

pytestmark = pytest.mark.slow

FAST = ("--heartbeat-interval", "0.5", "--poll-interval", "0.5")


def push_record(url: str, value) -> None:
    Client(Config(redis_url=url)).push({"class": "tests.core.jobs.record", "args": [value]})
    close_connections()


def recorded(url: str) -> list:
    client = redis.Redis.from_url(url)
    try:
        return [json.loads(v) for v in client.lrange("test:results", 0, -1)]
    finally:
        client.close()


def test_worker_waits_for_redis_that_is_down_at_start(start_worker):
    port = free_port()
    server = RedisServer(port=port)
    worker = start_worker(*FAST, redis=server.url)
    worker.wait_for_log("is unreachable")
    try:
        server.start()
        push_record(server.url, "late start")
        wait_until(lambda: recorded(server.url) == ["late start"], 20, message="the job")
        assert worker.process.poll() is None
    finally:
        server.cleanup()


def test_worker_survives_redis_restarting_mid_run(start_worker):
    server = RedisServer().start()
    try:
        worker = start_worker("-c", "2", *FAST, redis=server.url)
        push_record(server.url, "before")
        wait_until(lambda: recorded(server.url) == ["before"], 15, message="first job")
        server.stop()
        worker.wait_for_log("Error fetching job")
        assert worker.process.poll() is None
        server.start()
        push_record(server.url, "after")
        wait_until(lambda: recorded(server.url) == ["after"], 20, message="job after restart")
        worker.wait_for_log("Redis is reachable again")
        # One report per outage per thread, not one per retry: no log flood.
        assert worker.log().count("Error fetching job") <= 2
    finally:
        server.cleanup()
