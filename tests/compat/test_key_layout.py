"""Every key the engine writes, spelled exactly as Sidekiq spells it."""

import time
from datetime import UTC, datetime

import pytest

from wurk_django import Client
from wurk_django.core import keys

IDENTITY = "app-1.example.com:4711:9f2c4e1ab07d"


def test_fixed_key_names():
    assert keys.QUEUES == "queues"
    assert keys.SCHEDULE == "schedule"
    assert keys.RETRY == "retry"
    assert keys.DEAD == "dead"
    assert keys.PROCESSES == "processes"
    assert keys.PROCESS_CLEANUP == "process_cleanup"
    assert keys.STAT_PROCESSED == "stat:processed"
    assert keys.STAT_FAILED == "stat:failed"
    assert keys.SORTED_SETS == ("schedule", "retry", "dead")


def test_queue_keys_have_the_queue_prefix_and_no_namespace():
    assert keys.queue("default") == "queue:default"
    assert keys.queue("critical:eu.1-a") == "queue:critical:eu.1-a"
    assert keys.QUEUE_PREFIX == "queue:"


def test_process_keys():
    assert keys.work(IDENTITY) == "app-1.example.com:4711:9f2c4e1ab07d:work"
    assert keys.signals(IDENTITY) == "app-1.example.com:4711:9f2c4e1ab07d-signals"


def test_stat_keys():
    assert keys.stat("processed") == "stat:processed"
    assert keys.stat("failed") == "stat:failed"
    assert keys.stat("processed", "2025-02-14") == "stat:processed:2025-02-14"
    assert keys.stat("failed", "2025-02-14") == "stat:failed:2025-02-14"


@pytest.mark.parametrize("at, minute_key, ten_minute_key", [
    (datetime(2025, 2, 14, 8, 43), "j|250214|8:43", "j|250214|8:4"),
    (datetime(2025, 2, 14, 8, 0), "j|250214|8:00", "j|250214|8:0"),
    (datetime(2025, 2, 14, 8, 5), "j|250214|8:05", "j|250214|8:0"),
    (datetime(2025, 2, 14, 0, 9), "j|250214|0:09", "j|250214|0:0"),
    (datetime(2025, 12, 31, 23, 59), "j|251231|23:59", "j|251231|23:5"),
    (datetime(2030, 1, 2, 14, 30, tzinfo=UTC), "j|300102|14:30", "j|300102|14:3"),
])
def test_metrics_keys(at, minute_key, ten_minute_key):
    assert keys.metrics_minute(at) == minute_key
    assert keys.metrics_ten_minutes(at) == ten_minute_key


def test_minute_and_ten_minute_keys_never_collide():
    minute_keys = {keys.metrics_minute(datetime(2025, 2, 14, h, m))
                   for h in range(24) for m in range(60)}
    ten_minute_keys = {keys.metrics_ten_minutes(datetime(2025, 2, 14, h, m))
                       for h in range(24) for m in range(60)}
    assert len(minute_keys) == 24 * 60
    assert len(ten_minute_keys) == 24 * 6
    assert not minute_keys & ten_minute_keys


@pytest.mark.parametrize("at, key", [
    (datetime(2025, 2, 14, 8, 3), "h|billing.tasks.charge-14-8:3"),
    (datetime(2025, 2, 14, 8, 43), "h|billing.tasks.charge-14-8:43"),
    (datetime(2025, 2, 5, 0, 0), "h|billing.tasks.charge-5-0:0"),
    (datetime(2025, 2, 28, 23, 59, tzinfo=UTC), "h|billing.tasks.charge-28-23:59"),
])
def test_histogram_keys_are_unpadded(at, key):
    assert keys.histogram("billing.tasks.charge", at) == key


def test_deploy_mark_keys():
    assert keys.deploy_marks(datetime(2025, 2, 14, 8, 43)) == "20250214-marks"
    assert keys.deploy_marks(datetime(2025, 1, 3, tzinfo=UTC)) == "20250103-marks"
    assert keys.deploy_lock("abc1234 Fix login") == "deploylock-abc1234 Fix login"


def test_a_push_writes_only_sidekiq_keys(config, redis_client):
    Client().push({"class": "X", "args": [], "queue": "critical"})
    Client().push({"class": "X", "args": []})
    Client().push({"class": "X", "args": [], "at": time.time() + 60})
    Client().push_bulk({"class": "X", "args": [[1], [2]], "queue": "low"})
    assert sorted(key.decode() for key in redis_client.keys("*")) == [
        "queue:critical", "queue:default", "queue:low", "queues", "schedule"]
    assert redis_client.type("queues") == b"set"
    assert redis_client.type("queue:default") == b"list"
    assert redis_client.type("schedule") == b"zset"
    assert redis_client.ttl("queue:default") == -1  # never expires
    assert redis_client.smembers("queues") == {b"critical", b"default", b"low"}
