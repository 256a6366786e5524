"""Job timestamps in Sidekiq 8's integer ms (the default) or Sidekiq 6/7's float seconds."""

import time

import pytest

from tests.core.test_retry import Flaky, _fail
from wurk_django.core import Config, keys, set_default_config, testing, testing_modes
from wurk_django.core.api.sorted_sets import DeadSet, RetrySet
from wurk_django.core.cli import build_parser, config_from_args
from wurk_django.core.client import Client
from wurk_django.core.cron import CronDriver
from wurk_django.core.errors import ConfigurationError
from wurk_django.core.payload import dumps, loads, to_epoch_seconds
from wurk_django.core.redis import close_connections, connection_for
from wurk_django.core.retry import JobRetry
from wurk_django.core.scheduled import Enqueuer


@pytest.fixture
def float_config(redis_url):
    config = Config(redis_url=redis_url, tag="tests", timestamp_format="float")
    set_default_config(config)
    yield config
    set_default_config(None)
    close_connections()


def _is_float_seconds_now(value, before):
    """Float epoch seconds taken during the test (Sidekiq 6/7's `Time.now.to_f`)."""
    return type(value) is float and before - 1 <= value <= time.time() + 1


def _queued(redis_client, queue="default"):
    return [loads(raw) for raw in redis_client.lrange(keys.queue(queue), 0, -1)]


def test_the_default_is_integer_milliseconds(config, redis_client):
    Client().push({"class": "X", "args": []})
    [job] = _queued(redis_client)
    assert config.timestamp_format == "ms"
    assert type(job["created_at"]) is int and type(job["enqueued_at"]) is int


def test_float_format_stamps_created_at_and_enqueued_at_as_seconds(float_config, redis_client):
    before = time.time()
    Client().push({"class": "X", "args": [1]})
    Client().push_bulk({"class": "X", "args": [[2], [3]]})
    jobs = _queued(redis_client)
    assert len(jobs) == 3
    for job in jobs:
        assert _is_float_seconds_now(job["created_at"], before)
        assert _is_float_seconds_now(job["enqueued_at"], before)


def test_float_format_applies_to_retry_and_discard_fields(float_config, redis_client):
    retrier = JobRetry(float_config, connection_for(float_config))
    before = time.time()
    first = {"retry": 3, "queue": "work", "class": Flaky.wire_name, "args": [], "jid": "a" * 24}
    _fail(retrier, Flaky, first)
    [member] = redis_client.zrange(keys.RETRY, 0, -1)
    booked = loads(member)
    assert _is_float_seconds_now(booked["failed_at"], before)
    redis_client.delete(keys.RETRY)
    _fail(retrier, Flaky, booked)
    again = loads(redis_client.zrange(keys.RETRY, 0, -1)[0])
    assert again["failed_at"] == booked["failed_at"]
    assert _is_float_seconds_now(again["retried_at"], before)
    discarded = {"retry": 0, "dead": False, "queue": "work", "class": Flaky.wire_name,
                 "args": [], "jid": "b" * 24}
    deaths = []
    float_config.death_handlers.append(lambda job, exc: deaths.append(job))
    _fail(retrier, Flaky, discarded)
    assert _is_float_seconds_now(deaths[0]["discarded_at"], before)


def test_scheduled_promotion_stamps_enqueued_at_in_float_and_keeps_created_at(float_config,
                                                                             redis_client):
    original = 1739522580.25
    job = {"class": "X", "args": [], "queue": "default", "jid": "c" * 24, "retry": True,
           "created_at": original}
    redis_client.zadd(keys.SCHEDULE, {dumps(job): time.time() - 1})
    connection = connection_for(float_config)
    before = time.time()
    assert Enqueuer(float_config, connection, Client(float_config, connection)).enqueue_jobs() == 1
    [promoted] = _queued(redis_client)
    assert promoted["created_at"] == original
    assert _is_float_seconds_now(promoted["enqueued_at"], before)


def test_cron_pushes_and_dashboard_actions_stamp_in_float(float_config, redis_client):
    connection = connection_for(float_config)
    driver = CronDriver(float_config, connection, Client(float_config, connection),
                        is_leader=lambda: True, entries=[])
    before = time.time()
    driver.push("lid1", "X", {"queue": "crons"}, int(before), int(before))
    [fired] = _queued(redis_client, "crons")
    assert _is_float_seconds_now(fired["created_at"], before)
    assert _is_float_seconds_now(fired["enqueued_at"], before)
    failed = {"class": "X", "args": [], "queue": "retried", "jid": "d" * 24, "retry": True,
              "retry_count": 1, "created_at": 1739522580123}
    redis_client.zadd(keys.RETRY, {dumps(failed): time.time() + 600})
    [entry] = list(RetrySet(float_config))
    entry.retry()
    dead = {**failed, "jid": "e" * 24, "queue": "revived"}
    redis_client.zadd(keys.DEAD, {dumps(dead): time.time()})
    [entry] = list(DeadSet(float_config))
    entry.add_to_queue()
    for queue in ("retried", "revived"):
        [job] = _queued(redis_client, queue)
        assert job["created_at"] == 1739522580123  # kept as written, read as either form
        assert _is_float_seconds_now(job["enqueued_at"], before)


def test_fake_testing_mode_stamps_in_the_configured_format(float_config):
    before = time.time()
    with testing("fake"):
        Client().push({"class": "X", "args": []})
        [job] = testing_modes.jobs_for("X")
        testing_modes.queues.clear_all()
    assert _is_float_seconds_now(job["enqueued_at"], before)


def test_readers_accept_both_forms():
    assert to_epoch_seconds(1739522580123) == pytest.approx(1739522580.123)
    assert to_epoch_seconds(1739522580.123) == 1739522580.123


@pytest.mark.parametrize("value", ["s", "seconds", "MS", None, 1000])
def test_other_formats_are_rejected(value):
    with pytest.raises(ConfigurationError, match="timestamp_format"):
        Config(timestamp_format=value)


def test_the_cli_flag_sets_the_format():
    args = build_parser().parse_args(["--timestamp-format", "float"])
    assert config_from_args(args).timestamp_format == "float"
    assert config_from_args(build_parser().parse_args([])).timestamp_format == "ms"
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--timestamp-format", "iso"])
