"""The data API's cluster numbers: Stats in two round trips (counted), reset, and daily
History."""

import time
from datetime import UTC, date, datetime

import pytest
import redis

from wurk_django.core import Client, keys
from wurk_django.core.api import History, Stats
from wurk_django.core.payload import dumps


def heartbeat(redis_client, identity: str, busy: int) -> None:
    redis_client.sadd(keys.PROCESSES, identity)
    redis_client.hset(identity, mapping={"info": dumps({"identity": identity}), "busy": busy})


def test_stats_read_counters_set_sizes_busy_threads_and_queue_sizes(config, redis_client):
    redis_client.set(keys.STAT_PROCESSED, 120)
    redis_client.set(keys.STAT_FAILED, 7)
    redis_client.zadd(keys.SCHEDULE, {"s1": 1.0, "s2": 2.0})
    redis_client.zadd(keys.RETRY, {"r1": 1.0, "r2": 2.0, "r3": 3.0})
    redis_client.zadd(keys.DEAD, {"d1": 1.0})
    heartbeat(redis_client, "host:1:aaa", 3)
    heartbeat(redis_client, "host:2:bbb", 2)
    for _ in range(4):
        Client.enqueue_to("low", "Job")
    Client.enqueue_to("critical", "Job")
    for _ in range(2):
        Client.enqueue_to("default", "Job")

    stats = Stats(config)

    assert (stats.processed, stats.failed) == (120, 7)
    assert (stats.scheduled_size, stats.retry_size, stats.dead_size) == (2, 3, 1)
    assert stats.processes_size == 2
    assert stats.workers_size == 5
    assert stats.enqueued == 7
    assert list(stats.queues.items()) == [("low", 4), ("default", 2), ("critical", 1)]


class CountingConnection(redis.Connection):
    """A real connection to the suite's Redis that counts its requests: each write of
    one or more commands to the socket, then reading their replies, is one round trip."""

    requests = 0

    def send_packed_command(self, command, check_health=True):
        CountingConnection.requests += 1
        super().send_packed_command(command, check_health)


def test_stats_take_two_round_trips_however_many_processes_and_queues(config, redis_client):
    for n in range(3):
        heartbeat(redis_client, f"host:{n}:abc", n)
    for queue in ("a", "b", "c", "d"):
        Client.enqueue_to(queue, "Job")
    counted = config.replace(redis_options={"connection_class": CountingConnection})
    Stats(counted)  # opens the pooled connection: redis-py's handshake is not a Stats trip
    CountingConnection.requests = 0
    stats = Stats(counted)
    assert CountingConnection.requests == 2
    assert (stats.processes_size, stats.workers_size, stats.enqueued) == (3, 3, 4)
    redis_client.delete(*(keys.queue(queue) for queue in "abcd"))
    redis_client.delete(keys.QUEUES, keys.PROCESSES)
    CountingConnection.requests = 0
    Stats(counted)  # nothing to ask in a second trip: one
    assert CountingConnection.requests == 1


def test_stats_on_an_empty_database_are_zero(config):
    stats = Stats()  # the default config, installed by the fixture
    assert (stats.processed, stats.failed, stats.enqueued, stats.workers_size) == (0, 0, 0, 0)
    assert stats.queues == {}
    assert stats.default_queue_latency == 0.0


@pytest.mark.parametrize("enqueued_at", [
    pytest.param(lambda now: int(now * 1000) - 30_000, id="epoch-ms int"),
    pytest.param(lambda now: now - 30.0, id="epoch-s float (Sidekiq < 8)"),
])
def test_default_queue_latency_reads_both_timestamp_formats(config, redis_client, enqueued_at):
    now = time.time()
    # The oldest job sits at the right end: that is the one latency measures.
    redis_client.lpush(keys.queue("default"),
                       dumps({"class": "Old", "args": [], "enqueued_at": enqueued_at(now)}),
                       dumps({"class": "New", "args": [], "enqueued_at": int(now * 1000)}))
    latency = Stats(config).default_queue_latency
    assert 29.5 < latency < 35


def test_default_queue_latency_of_an_unparseable_oldest_job_is_zero(config, redis_client):
    redis_client.lpush(keys.queue("default"), b"\xffnot json")
    assert Stats(config).default_queue_latency == 0.0


def test_reset_zeroes_both_counters_or_only_the_named_one(config, redis_client):
    redis_client.set(keys.STAT_PROCESSED, 10)
    redis_client.set(keys.STAT_FAILED, 4)
    Stats.reset("failed", config=config)
    assert redis_client.mget(keys.STAT_PROCESSED, keys.STAT_FAILED) == [b"10", b"0"]
    Stats.reset(config=config)
    assert redis_client.mget(keys.STAT_PROCESSED, keys.STAT_FAILED) == [b"0", b"0"]


def test_reset_rejects_an_unknown_counter(config, redis_client):
    with pytest.raises(ValueError, match="busy"):
        Stats.reset("busy", config=config)
    assert redis_client.keys("*") == []


def test_history_reads_one_key_per_day_newest_first_missing_days_as_zero(config, redis_client):
    redis_client.mset({"stat:processed:2025-02-14": 50, "stat:processed:2025-02-12": 30,
                       "stat:failed:2025-02-13": 2, "stat:processed:2025-02-11": 999})
    history = History(3, start_date=date(2025, 2, 14), config=config)
    assert list(history.processed.items()) == [("2025-02-14", 50), ("2025-02-13", 0),
                                               ("2025-02-12", 30)]
    assert history.failed == {"2025-02-14": 0, "2025-02-13": 2, "2025-02-12": 0}


def test_history_starts_today_in_utc_by_default(config, redis_client):
    today = datetime.now(UTC).strftime("%Y-%m-%d")
    redis_client.set(f"stat:processed:{today}", 5)
    assert History(1, config=config).processed == {today: 5}


@pytest.mark.parametrize("days", [0, 5 * 365 + 1, "7"])
def test_history_rejects_a_window_outside_five_years(config, days):
    with pytest.raises(ValueError):
        History(days, config=config)
