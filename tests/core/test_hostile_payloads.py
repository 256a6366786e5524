"""No job lost to hostile payloads: whatever bytes sit in a queue, a private list, the
retry or schedule set, every reader judges them with one decoder; what cannot run goes
to the dead set with its bytes kept, and one bad entry never stops a sweep."""

import json

import pytest

from tests.support.workers import wait_until
from wurk_django.core import Client, keys
from wurk_django.core.errors import InvalidJobError
from wurk_django.core.fetch.reaper import Reaper
from wurk_django.core.payload import decode_job, dumps, loads
from wurk_django.core.redis import connection_for
from wurk_django.core.scheduled import Enqueuer

FAST = ("--heartbeat-interval", "0.5", "--poll-interval", "0.5")

DEEP = b'{"class":"x","args":' + b"[" * 1000 + b"]" * 1000 + b',"jid":"deep"}'
NAN = b'{"class":"tests.core.jobs.record","args":[NaN],"jid":"nan","queue":"default"}'
BAD_UTF8 = b'{"class":"tests.core.jobs.record","args":["\xff\xfe"],"jid":"utf8"}'
HOSTILE = [DEEP, NAN, BAD_UTF8]


def results(redis_client) -> list:
    return [json.loads(v) for v in redis_client.lrange("test:results", 0, -1)]


def healthy(index: int, queue: str = "default") -> bytes:
    return dumps({"class": "tests.core.jobs.record", "args": [index], "queue": queue,
                  "jid": f"healthy-{queue}-{index}", "retry": True})


def test_the_decoder_refuses_every_form_of_malformed_stored_job():
    cases = {
        "1,000 levels deep": DEEP,
        # Past Ruby's JSON.parse limit, though Python 3.13 alone would read it.
        "101 levels deep": b'{"class":"x","args":' + b"[" * 100 + b"]" * 100 + b"}",
        "NaN": NAN,
        "Infinity": b'{"class":"x","args":[Infinity]}',
        "invalid UTF-8": BAD_UTF8,
        "not an object": b"[1,2]",
        "no class": b'{"args":[]}',
        "empty class": b'{"class":"","args":[]}',
        "no args": b'{"class":"x","jid":"1"}',
        "args a string": b'{"class":"x","args":"nope"}',
        "not JSON": b"not json {",
    }
    accepted = {}
    for name, raw in cases.items():
        try:
            accepted[name] = decode_job(raw)
        except InvalidJobError as exc:
            assert "payload" in str(exc), (name, exc)
    assert accepted == {}
    assert decode_job(healthy(1))["args"] == [1]
    # 100 levels (the job object, its args and 98 more) is what Sidekiq still reads.
    assert decode_job(b'{"class":"x","args":' + b"[" * 99 + b"]" * 99 + b"}")
    with pytest.raises(ValueError):
        loads(DEEP)  # the plain decoder raises the one exception type callers guard on


@pytest.mark.slow
def test_hostile_payloads_reach_dead_byte_for_byte_and_work_goes_on(config, start_worker,
                                                                    redis_client):
    for raw in HOSTILE:
        redis_client.lpush("queue:default", raw)
    for index in range(40):
        redis_client.lpush("queue:default", healthy(index))
    redis_client.sadd(keys.QUEUES, "default")
    start_worker("-p", "2", "-c", "3", *FAST)
    wait_until(lambda: len(results(redis_client)) == 40, 30, message="the healthy jobs")
    wait_until(lambda: redis_client.zcard(keys.DEAD) == 3, 15, message="three dead entries")
    assert sorted(redis_client.zrange(keys.DEAD, 0, -1)) == sorted(HOSTILE)
    assert sorted(results(redis_client)) == list(range(40))
    private = [k for k in redis_client.scan_iter("queue:default|*")]
    wait_until(lambda: all(redis_client.llen(k) == 0 for k in private), 10,
               message="every private list acknowledged")


def orphan_key(queue: str, nonce: str) -> str:
    # A process that never registered: its lists are an orphan's to the reaper.
    return keys.private_queue(queue, "ghost-host", 4242, nonce)


def test_one_bad_entry_never_stops_a_reaper_sweep(config, redis_client):
    poisoned = orphan_key("default", "n1")
    # Bad entries between healthy ones, and lists after it, in scan order or not.
    redis_client.lpush(poisoned, healthy(0), DEEP, healthy(1), NAN, BAD_UTF8, healthy(2))
    others = [orphan_key("default", f"n{i}") for i in range(2, 8)]
    for offset, key in enumerate(others):
        redis_client.lpush(key, *[healthy(10 * (offset + 1) + i) for i in range(10)])
    connection = connection_for(config)
    reaper = Reaper(config, connection, ["default"])

    reaper.sweep_scoped()

    recovered = sorted(loads(raw)["args"][0] for raw in redis_client.lrange("queue:default",
                                                                            0, -1))
    assert recovered == [0, 1, 2] + list(range(10, 70))
    assert sorted(redis_client.zrange(keys.DEAD, 0, -1)) == sorted(HOSTILE)
    assert [redis_client.llen(key) for key in [poisoned, *others]] == [0] * 7


def test_the_poller_keeps_corrupt_members_in_dead(config, redis_client):
    corrupt = [b"{}", b'{"class":"x","jid":"no-args"}', b'{"class":"x","args":"a string"}',
               b'{"class":"x","args":[NaN]}', DEEP, b'{"class":"x","args":[],"queue":""}']
    good = dumps({"class": "tests.core.jobs.record", "args": ["due"], "queue": "default",
                  "jid": "due"})
    for raw in corrupt:
        redis_client.zadd(keys.RETRY, {raw: 1})
    redis_client.zadd(keys.SCHEDULE, {corrupt[0] + b" ": 1, good: 2})
    connection = connection_for(config)

    Enqueuer(config, connection, Client(config, connection)).enqueue_jobs()

    assert redis_client.zcard(keys.RETRY) == redis_client.zcard(keys.SCHEDULE) == 0
    assert sorted(redis_client.zrange(keys.DEAD, 0, -1)) == sorted([*corrupt, b"{} "])
    [pushed] = redis_client.lrange("queue:default", 0, -1)
    assert loads(pushed)["jid"] == "due"


@pytest.mark.slow
def test_a_failure_that_cannot_be_booked_goes_to_dead_not_limbo(config, start_worker,
                                                                 redis_client):
    # `retry_count` is not a number, so booking the retry raises, not Redis.
    raw = dumps({"class": "tests.core.jobs.always_fails", "args": ["unbookable"],
                 "queue": "default", "jid": "unbookable", "retry": 3, "retry_count": "abc"})
    redis_client.lpush("queue:default", raw)
    redis_client.lpush("queue:default", healthy(1))
    start_worker(*FAST)
    [dead] = wait_until(lambda: redis_client.zrange(keys.DEAD, 0, -1), 20, message="dead")
    job = loads(dead)
    assert job["jid"] == "unbookable" and job["retry_count"] == "abc"
    assert job["args"] == ["unbookable"]
    assert "could not book" in job["error_message"]
    wait_until(lambda: results(redis_client) == [1], 10, message="the healthy job")
    private = list(redis_client.scan_iter("queue:default|*"))
    wait_until(lambda: all(redis_client.llen(k) == 0 for k in private), 10,
               message="nothing left unacknowledged")
    assert redis_client.zcard(keys.RETRY) == 0


@pytest.mark.slow
def test_an_unknown_class_without_a_retry_key_is_retried_not_dropped(config, start_worker,
                                                                      redis_client):
    raw = dumps({"class": "Ruby::NotHere", "args": [1], "queue": "default", "jid": "ruby-1"})
    redis_client.lpush("queue:default", raw)
    start_worker(*FAST)
    [entry] = wait_until(lambda: redis_client.zrange(keys.RETRY, 0, -1), 20, message="retry")
    job = loads(entry)
    assert (job["jid"], job["retry_count"]) == ("ruby-1", 0)
    assert job["error_class"] == "wurk_django.core.errors.UnknownTaskError"
