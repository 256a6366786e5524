"""Real worker processes (`python -m wurk_django.core`), stopped with real signals."""

import json
import signal

import pytest

from tests.core import jobs
from tests.support.workers import wait_until
from wurk_django.core import Client, keys
from wurk_django.core.payload import dumps, loads

pytestmark = pytest.mark.slow

FAST = ("--heartbeat-interval", "0.5", "--poll-interval", "0.5")


def results(redis_client):
    return [json.loads(item) for item in redis_client.lrange("test:results", 0, -1)]


def identity_of(redis_client) -> str:
    members = wait_until(lambda: redis_client.smembers(keys.PROCESSES), 15, message="a heartbeat")
    [identity] = members
    return identity.decode()


def test_runs_function_class_and_named_tasks(config, start_worker, redis_client):
    jobs.record.perform_async({"n": 1})
    jobs.RecordingJob.perform_async("x")
    jid = Client.enqueue_to("shared", "HardJob", 1, "two")
    start_worker("-q", "default", "-q", "shared", *FAST)
    wait_until(lambda: len(results(redis_client)) == 3, 15, message="three results")
    got = results(redis_client)
    assert {"n": 1} in got
    assert {"HardJob": [1, "two"]} in got
    [class_result] = [r for r in got if isinstance(r, dict) and "class_job" in r]
    assert len(class_result["jid"]) == 24
    assert jid and redis_client.llen("queue:shared") == 0


def test_strict_order_drains_the_first_queue_first(config, start_worker, redis_client):
    for index in range(5):
        jobs.record.perform_async(index)
        jobs.record_critical.perform_async(index)
    start_worker("-c", "1", "-q", "critical", "-q", "default", *FAST)
    wait_until(lambda: len(results(redis_client)) == 10, 15, message="ten results")
    order = results(redis_client)
    assert order[:5] == [["critical", i] for i in range(5)]
    assert order[5:] == list(range(5))


def test_term_during_a_slow_job_requeues_it_and_exits_zero(config, start_worker, redis_client):
    jid = jobs.slow.perform_async(60, "long")
    worker = start_worker("-t", "1", *FAST)
    identity = identity_of(redis_client)
    wait_until(lambda: redis_client.lrange("test:started", 0, -1) == [b"long"], 15,
               message="the slow job to start")
    busy = wait_until(lambda: redis_client.hgetall(keys.work(identity)), 5, message="work hash")
    [entry] = [loads(v) for v in busy.values()]
    assert entry["queue"] == "default" and loads(entry["payload"])["jid"] == jid
    worker.send(signal.SIGTERM)
    assert worker.wait(15) == 0
    [requeued] = redis_client.lrange("queue:default", 0, -1)
    assert loads(requeued)["jid"] == jid
    assert requeued == entry["payload"].encode()  # the original string, byte for byte
    assert redis_client.lrange("test:finished", 0, -1) == []
    assert identity.encode() not in redis_client.smembers(keys.PROCESSES)
    assert not redis_client.exists(keys.work(identity))
    assert "requeueing jobs " + jid in worker.log()


def test_term_lets_a_short_job_finish(config, start_worker, redis_client):
    worker = start_worker("-t", "10", *FAST)
    identity_of(redis_client)
    jobs.slow.perform_async(1, "short")
    wait_until(lambda: redis_client.lrange("test:started", 0, -1), 10, message="start")
    worker.send(signal.SIGTERM)
    assert worker.wait(15) == 0
    assert redis_client.lrange("test:finished", 0, -1) == [b"short"]
    assert redis_client.llen("queue:default") == 0


def test_second_interrupt_stops_waiting_and_requeues(config, start_worker, redis_client):
    jid = jobs.slow.perform_async(60, "forced")
    worker = start_worker("-t", "60", *FAST)
    wait_until(lambda: redis_client.lrange("test:started", 0, -1), 15, message="start")
    worker.send(signal.SIGINT)
    worker.wait_for_log("Received INT")
    worker.send(signal.SIGINT)
    assert worker.wait(15) == 0
    [requeued] = redis_client.lrange("queue:default", 0, -1)
    assert loads(requeued)["jid"] == jid


def test_malformed_entries_reach_dead_intact_and_work_goes_on(config, start_worker,
                                                                redis_client):
    bad = [b"not json {", b'{"args":[1],"queue":"default"}', b"[1,2]",
           b'{"class":"x","args":"nope"}']
    for raw in bad:
        redis_client.lpush("queue:default", raw)
    jobs.record.perform_async("after")
    worker = start_worker(*FAST)
    wait_until(lambda: results(redis_client) == ["after"], 15, message="the good job")
    assert sorted(redis_client.zrange(keys.DEAD, 0, -1)) == sorted(bad)
    worker.wait_for_log("Invalid JSON for job")  # log lines are written in batches
    worker.wait_for_log("payload has no 'class'")


def test_unknown_class_fails_into_the_retry_path(config, start_worker, redis_client):
    jid = Client.enqueue_to("default", "Ruby::OnlyJob", 1)
    start_worker(*FAST)
    entry = wait_until(lambda: redis_client.zrange(keys.RETRY, 0, -1), 15, message="a retry")
    job = loads(entry[0])
    assert job["jid"] == jid
    assert job["error_class"] == "wurk_django.core.errors.UnknownTaskError"
    assert "Ruby::OnlyJob" in job["error_message"]
    assert job["retry_count"] == 0


def test_failures_book_retries_and_count_stats(config, start_worker, redis_client):
    jobs.always_fails.perform_async("nope")
    for index in range(3):
        jobs.record.perform_async(index)
    start_worker(*FAST)
    wait_until(lambda: redis_client.zcard(keys.RETRY) == 1, 15, message="a retry")
    wait_until(lambda: redis_client.get(keys.STAT_PROCESSED) == b"4", 15, message="stats flush")
    assert redis_client.get(keys.STAT_FAILED) == b"1"
    day_keys = redis_client.keys("stat:processed:*")
    assert len(day_keys) == 1 and redis_client.ttl(day_keys[0]) > 157_000_000
    minute_keys = [k for k in redis_client.keys("j|*") if k.count(b":") == 1
                   and len(k.split(b":")[1]) == 2]
    assert minute_keys
    counts = redis_client.hgetall(minute_keys[0])
    assert counts[f"{jobs.record.name}|p".encode()] == b"3"
    assert counts[f"{jobs.always_fails.name}|f".encode()] == b"1"
    assert f"{jobs.record.name}|ms".encode() in counts


def test_scheduled_and_retry_jobs_are_promoted(config, start_worker, redis_client):
    jobs.record.perform_in(0.5, "later")
    past = dumps({"retry": True, "queue": "default", "class": jobs.record.name,
                  "args": ["retried"], "jid": "9" * 24, "created_at": 1, "retry_count": 0})
    redis_client.zadd(keys.RETRY, {past: 1.0})
    start_worker(*FAST)
    wait_until(lambda: sorted(results(redis_client)) == ["later", "retried"], 20,
               message="both promoted jobs to run")
    assert redis_client.zcard(keys.SCHEDULE) == 0 and redis_client.zcard(keys.RETRY) == 0


def test_heartbeat_writes_sidekiq_process_fields(config, start_worker, redis_client):
    worker = start_worker("-c", "3", "-q", "critical,3", "-q", "default", "-g", "shop",
                          "--label", "blue", *FAST)
    identity = identity_of(redis_client)
    host, pid, nonce = identity.split(":")
    assert int(pid) == worker.pid and len(nonce) == 12
    beat = wait_until(lambda: redis_client.hgetall(identity), 5, message="identity hash")
    info = json.loads(beat[b"info"])
    assert info["identity"] == identity and info["pid"] == worker.pid
    assert info["tag"] == "shop" and info["concurrency"] == 3
    assert set(info["labels"]) == {"blue", "wurk", "python"}
    assert info["queues"] == ["critical", "default"]
    assert info["capsules"]["default"]["mode"] == "weighted"
    assert info["capsules"]["default"]["weights"] == {"critical": 3, "default": 0}
    assert info["embedded"] is False and isinstance(info["started_at"], float)
    assert beat[b"quiet"] == b"false" and beat[b"busy"] == b"0"
    assert int(beat[b"rss"]) > 1000 and int(beat[b"rtt_us"]) > 0
    assert float(beat[b"beat"]) > info["started_at"]
    assert 0 < redis_client.ttl(identity) <= 60


def test_tstp_quiets_and_ttin_dumps_stacks(config, start_worker, redis_client):
    worker = start_worker(*FAST)
    identity = identity_of(redis_client)
    worker.send(signal.SIGTSTP)
    wait_until(lambda: redis_client.hget(identity, "quiet") == b"true", 10, message="quiet")
    jobs.record.perform_async("ignored while quiet")
    worker.send(signal.SIGTTIN)
    worker.wait_for_log("Thread wurk-heartbeat")
    assert redis_client.llen("queue:default") == 1  # a quiet worker fetches nothing
    worker.send(signal.SIGTERM)
    assert worker.wait(15) == 0
    assert redis_client.llen("queue:default") == 1


def test_remote_quiet_and_stop_through_the_signals_list(config, start_worker, redis_client):
    worker = start_worker(*FAST)
    identity = identity_of(redis_client)
    for name in (b"TSTP",):
        redis_client.lpush(keys.signals(identity), name)
    wait_until(lambda: redis_client.hget(identity, "quiet") == b"true", 10, message="quiet")
    redis_client.lpush(keys.signals(identity), b"TERM")
    assert worker.wait(15) == 0
    assert identity.encode() not in redis_client.smembers(keys.PROCESSES)


def test_unknown_remote_signal_is_ignored(config, start_worker, redis_client):
    worker = start_worker(*FAST)
    identity = identity_of(redis_client)
    redis_client.lpush(keys.signals(identity), b"KILL")
    worker.wait_for_log("Ignoring unknown remote signal 'KILL'")
    jobs.record.perform_async("still working")
    wait_until(lambda: results(redis_client) == ["still working"], 10, message="job")
