"""The data API's queues and job records: paging, exact-bytes deletes, clear, timestamps."""

import time
from datetime import UTC, datetime

import pytest

from tests.support.redis_server import free_port
from wurk_django.core import Client, Config, RedisUnavailableError, keys
from wurk_django.core.api import TASK_WRAPPER, JobRecord, Queue
from wurk_django.core.payload import dumps, encode_backtrace


def push_numbered(count: int, queue: str = "default") -> list[str]:
    """Push jobs with args [0], [1], ... one at a time, so job 0 is the oldest."""
    return [Client.enqueue_to(queue, "Numbered", index) for index in range(count)]


def numbers(records) -> list[int]:
    return [record.args[0] for record in records]


def test_all_lists_known_queues_sorted_by_name(config):
    for name in ("mail", "critical", "default"):
        Client.enqueue_to(name, "Job")
    assert [queue.name for queue in Queue.all(config)] == ["critical", "default", "mail"]


def test_size_and_paused(config):
    push_numbered(3, "mail")
    queue = Queue("mail", config)
    assert queue.size == 3
    assert queue.paused is False


def test_pages_start_at_the_fetching_end(config):
    push_numbered(60)
    queue = Queue("default", config)
    first = queue.jobs(1, 25)
    assert numbers(first) == list(range(25))
    assert (first.total, first.pages) == (60, 3)
    assert numbers(queue.jobs(3, 25)) == list(range(50, 60))
    assert numbers(queue.jobs(4, 25)) == []
    assert numbers(queue.jobs(1, 25, newest_first=True)) == list(range(59, 34, -1))


def test_paging_rejects_page_zero(config):
    with pytest.raises(ValueError):
        Queue("default", config).jobs(0)


def test_iteration_yields_every_job_next_to_run_first(config):
    push_numbered(250)
    assert numbers(Queue("default", config)) == list(range(250))


def test_deleting_while_iterating_skips_nothing(config, redis_client):
    push_numbered(250)
    queue = Queue("default", config)
    for record in queue:
        if record.args[0] % 2 == 0:
            assert record.delete()
    left = [JobRecord(raw).args[0] for raw in redis_client.lrange(keys.queue("default"), 0, -1)]
    assert sorted(left) == list(range(1, 250, 2))


def test_find_job_by_jid(config):
    jids = push_numbered(120)
    queue = Queue("default", config)
    found = queue.find_job(jids[7])
    assert found.jid == jids[7] and found.args == [7] and found.queue == "default"
    assert queue.find_job("0" * 24) is None


def test_delete_uses_the_exact_stored_bytes(config, redis_client):
    # Spaced JSON, as another writer might store it: re-serialising would not match it.
    stored = b'{"class": "Spaced",  "args": [1], "jid": "abc", "queue": "default"}'
    redis_client.lpush(keys.queue("default"), stored)
    [record] = Queue("default", config).jobs()
    assert record.raw == stored and record.value == stored.decode()
    assert record.delete() is True
    assert record.delete() is False
    assert redis_client.llen(keys.queue("default")) == 0


def test_an_unparseable_payload_is_kept_raw_and_can_be_deleted(config, redis_client):
    stored = b"\xff{not json"
    redis_client.lpush(keys.queue("default"), stored)
    [record] = Queue("default", config).jobs()
    assert record.raw == stored
    assert (record.item, record.klass, record.jid, record.created_at) == (None, None, None, None)
    assert record.args == [record.value]
    assert record.latency == 0.0
    assert record.delete() is True
    assert redis_client.exists(keys.queue("default")) == 0


def test_clear_unlinks_the_list_and_forgets_the_queue_only(config, redis_client):
    push_numbered(5, "mail")
    push_numbered(2, "default")
    Queue("mail", config).clear()
    assert redis_client.exists(keys.queue("mail")) == 0
    assert redis_client.smembers(keys.QUEUES) == {b"default"}
    assert redis_client.llen(keys.queue("default")) == 2


@pytest.mark.parametrize("enqueued_at", [
    pytest.param(lambda now: int(now * 1000) - 90_000, id="epoch-ms int"),
    pytest.param(lambda now: now - 90.0, id="epoch-s float"),
])
def test_latency_measures_the_oldest_job_in_both_formats(config, redis_client, enqueued_at):
    now = time.time()
    redis_client.lpush(keys.queue("default"),
                       dumps({"class": "Old", "args": [], "enqueued_at": enqueued_at(now)}),
                       dumps({"class": "New", "args": [], "enqueued_at": int(now * 1000)}))
    assert 89.5 < Queue("default", config).latency < 95


def test_latency_of_an_empty_queue_is_zero(config):
    assert Queue("nothing", config).latency == 0.0


# --- JobRecord ---------------------------------------------------------------------

STAMP = datetime(2025, 2, 14, 8, 43, 0, 123000, tzinfo=UTC)


@pytest.mark.parametrize("stamp", [1739522580123, 1739522580.123],
                         ids=["epoch-ms int", "epoch-s float"])
def test_record_datetimes_are_aware_utc_in_both_formats(stamp):
    record = JobRecord(dumps({"class": "X", "args": [], "created_at": stamp,
                              "enqueued_at": stamp, "failed_at": stamp, "retried_at": stamp}))
    for value in (record.created_at, record.enqueued_at, record.failed_at, record.retried_at):
        assert value.tzinfo is UTC
        assert abs((value - STAMP).total_seconds()) < 0.001


def test_record_created_at_falls_back_to_enqueued_at():
    record = JobRecord(dumps({"class": "X", "args": [], "enqueued_at": 1739522580123}))
    assert abs((record.created_at - STAMP).total_seconds()) < 0.001
    assert JobRecord(dumps({"class": "X", "args": []})).created_at is None


def test_record_latency_in_both_formats():
    now = time.time()
    assert 9.5 < JobRecord(dumps({"enqueued_at": int(now * 1000) - 10_000})).latency < 15
    assert 9.5 < JobRecord(dumps({"enqueued_at": now - 10.0})).latency < 15


def test_record_failure_fields_and_backtrace():
    lines = ["app/tasks.py:12:in 'charge'", "app/billing.py:3:in 'run'"]
    record = JobRecord(dumps({
        "class": "billing.charge", "args": [1], "jid": "j1", "queue": "low", "retry_count": 2,
        "error_message": "declined", "error_class": "billing.Declined", "tags": ["vip"],
        "error_backtrace": encode_backtrace(lines)}))
    assert (record.klass, record.jid, record.queue, record.retry_count) == (
        "billing.charge", "j1", "low", 2)
    assert (record.error_class, record.error_message, record.has_error) == (
        "billing.Declined", "declined", True)
    assert record.tags == ["vip"]
    assert record.error_backtrace == lines


def test_record_reads_a_plain_list_backtrace_from_old_sidekiq():
    record = JobRecord(dumps({"class": "X", "args": [], "error_backtrace": ["a:1", "b:2"]}))
    assert record.error_backtrace == ["a:1", "b:2"]
    assert JobRecord(dumps({"class": "X", "args": []})).error_backtrace == []


def test_display_class_prefers_display_class_then_wrapped_then_class():
    assert JobRecord(dumps({"class": "W", "wrapped": "Real", "display_class": "Shown"})
                     ).display_class == "Shown"
    assert JobRecord(dumps({"class": "W", "wrapped": "Real"})).display_class == "Real"
    assert JobRecord(dumps({"class": "Plain"})).display_class == "Plain"


def test_args_of_a_django_task_show_the_wrapped_arguments():
    record = JobRecord(dumps({"class": TASK_WRAPPER, "wrapped": "app.tasks.send",
                              "args": [{"args": [7, "x"], "kwargs": {"urgent": True}}]}))
    assert record.args == [7, "x", {"urgent": True}]
    assert record.raw_args == [{"args": [7, "x"], "kwargs": {"urgent": True}}]
    bare = JobRecord(dumps({"class": TASK_WRAPPER, "args": [{"args": [1], "kwargs": {}}]}))
    assert bare.args == [1]
    odd = JobRecord(dumps({"class": TASK_WRAPPER, "args": ["not an envelope"]}))
    assert odd.args == ["not an envelope"]


def test_args_of_an_encrypted_job_hide_the_last_argument():
    record = JobRecord(dumps({"class": "X", "args": [1, "c2VjcmV0"], "encrypt": True}))
    assert record.args == [1, "[encrypted data]"]


def test_reads_become_redis_unavailable_when_redis_is_down():
    down = Config(redis_url=f"redis://127.0.0.1:{free_port()}/0", network_timeout_s=0.5)
    with pytest.raises(RedisUnavailableError):
        _ = Queue("default", down).size
    with pytest.raises(RedisUnavailableError):
        Queue("default", down).clear()
