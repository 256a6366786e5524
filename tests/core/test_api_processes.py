"""The data API's processes and running jobs, and remote quiet/stop of a real worker."""

import time
from datetime import UTC, datetime

import pytest

from tests.support.workers import wait_until
from wurk_django.core import Client, keys
from wurk_django.core.api import EmbeddedProcessError, ProcessSet, Workers
from wurk_django.core.payload import dumps

STARTED = 1739522580.25


def info(identity: str, **fields) -> bytes:
    pid = int(identity.split(":")[1])
    return dumps({"hostname": "app-1", "started_at": STARTED, "pid": pid, "tag": "shop",
                  "concurrency": 5, "queues": ["default", "low"], "labels": ["wurk", "python"],
                  "identity": identity, "version": "0.1.0", "embedded": False, **fields})


def register(redis_client, identity: str, *, busy=0, quiet="false", rss=2048, rtt_us=150,
             **info_fields) -> None:
    redis_client.sadd(keys.PROCESSES, identity)
    fields = {"info": info(identity, **info_fields), "busy": busy, "beat": repr(time.time()),
              "quiet": quiet, "rss": rss}
    if rtt_us is not None:
        fields["rtt_us"] = rtt_us
    redis_client.hset(identity, mapping=fields)


# --- ProcessSet --------------------------------------------------------------------

def test_lists_live_processes_and_skips_members_without_info(config, redis_client):
    register(redis_client, "app-1:10:aaa", busy=2, rss=1000)
    register(redis_client, "app-2:20:bbb", quiet="true", rss=500, rtt_us=None, concurrency=3)
    redis_client.sadd(keys.PROCESSES, "gone:30:ccc")  # its heartbeat hash expired

    processes = ProcessSet(config)
    first, second = processes
    assert [first.identity, second.identity] == ["app-1:10:aaa", "app-2:20:bbb"]
    assert (first.hostname, first.pid, first.tag, first.concurrency) == ("app-1", 10, "shop", 5)
    assert (first.busy, first.rss, first.rtt_us, first.is_quiet) == (2, 1000, 150, False)
    assert (first.queues, first.labels, first.version) == (
        ["default", "low"], ["wurk", "python"], "0.1.0")
    assert first.started_at == datetime.fromtimestamp(STARTED, UTC)
    assert isinstance(first.beat, float) and abs(first.beat - time.time()) < 5
    assert first.embedded is False and first.stopping is False
    assert (second.is_quiet, second.stopping, second.rtt_us) == (True, True, 0)
    assert processes.size == 3  # SCARD counts the dead member until cleanup
    assert (processes.total_concurrency, processes.total_rss) == (8, 1500)


def test_get_one_process(config, redis_client):
    register(redis_client, "app-1:10:aaa")
    assert ProcessSet(config).get("app-1:10:aaa").pid == 10
    assert ProcessSet(config).get("app-9:90:zzz") is None


def test_cleanup_drops_dead_members_at_most_once_a_minute(config, redis_client):
    register(redis_client, "app-1:10:aaa")
    redis_client.sadd(keys.PROCESSES, "gone:30:ccc")
    processes = ProcessSet(config)
    assert processes.cleanup() == 1
    assert redis_client.smembers(keys.PROCESSES) == {b"app-1:10:aaa"}
    redis_client.sadd(keys.PROCESSES, "gone:31:ddd")
    assert processes.cleanup() == 0  # the process_cleanup lock is held for 60 s
    assert 0 < redis_client.ttl(keys.PROCESS_CLEANUP) <= 60


@pytest.mark.parametrize("action, signal", [("quiet", "TSTP"), ("stop", "TERM"),
                                            ("dump_threads", "TTIN")])
def test_signals_are_pushed_with_a_ttl(config, redis_client, action, signal):
    register(redis_client, "app-1:10:aaa")
    [process] = ProcessSet(config)
    getattr(process, action)()
    assert redis_client.lrange(keys.signals("app-1:10:aaa"), 0, -1) == [signal.encode()]
    assert 0 < redis_client.ttl(keys.signals("app-1:10:aaa")) <= 60


def test_embedded_processes_cannot_be_quieted_or_stopped(config, redis_client):
    register(redis_client, "web-1:10:aaa", embedded=True)
    register(redis_client, "app-1:20:bbb")
    embedded = ProcessSet(config).get("web-1:10:aaa")
    with pytest.raises(EmbeddedProcessError):
        embedded.quiet()
    with pytest.raises(EmbeddedProcessError):
        embedded.stop()
    assert ProcessSet(config).quiet_all() == 1
    assert redis_client.exists(keys.signals("web-1:10:aaa")) == 0
    assert redis_client.lrange(keys.signals("app-1:20:bbb"), 0, -1) == [b"TSTP"]


def test_an_unknown_signal_is_refused(config, redis_client):
    register(redis_client, "app-1:10:aaa")
    with pytest.raises(ValueError):
        ProcessSet(config).get("app-1:10:aaa").signal("KILL")


# --- Workers -----------------------------------------------------------------------

def test_workers_read_payloads_given_as_string_or_object(config, redis_client):
    now = int(time.time())
    string_job = {"class": "app.Slow", "args": [1], "jid": "a" * 24, "queue": "default"}
    object_job = {"class": "Ruby", "args": [2], "jid": "b" * 24, "queue": "low"}
    register(redis_client, "app-1:10:aaa", busy=2)
    redis_client.hset(keys.work("app-1:10:aaa"), mapping={
        # Sidekiq nests the payload as a JSON string; seconds since the epoch.
        "t1": dumps({"queue": "default", "payload": dumps(string_job).decode(),
                     "run_at": now - 5}),
        # An object payload, with run_at in milliseconds.
        "t2": dumps({"queue": "low", "payload": object_job, "run_at": (now - 60) * 1000}),
    })
    register(redis_client, "gone:30:ccc", busy=1)
    redis_client.delete("gone:30:ccc")  # dead: its lingering work hash is ignored
    redis_client.hset(keys.work("gone:30:ccc"), "t9", dumps({"queue": "x", "payload": "{}",
                                                             "run_at": now}))

    works = list(Workers(config))
    assert [(identity, tid) for identity, tid, _ in works] == [("app-1:10:aaa", "t2"),
                                                               ("app-1:10:aaa", "t1")]
    older, newer = (work for _, _, work in works)
    assert older.payload == object_job and older.queue == "low"
    assert older.run_at == datetime.fromtimestamp(now - 60, UTC)
    assert newer.payload == string_job and newer.job.raw == dumps(string_job)
    assert newer.run_at == datetime.fromtimestamp(now - 5, UTC)
    assert Workers(config).find_work("a" * 24).tid == "t1"
    assert Workers(config).find_work("c" * 24) is None
    assert Workers(config).size == 2  # busy of the live process only


def test_workers_of_an_empty_cluster(config):
    assert list(Workers(config)) == [] and Workers(config).size == 0
    assert list(ProcessSet(config)) == []


# --- a real worker process ---------------------------------------------------------

FAST = ("--heartbeat-interval", "0.5", "--poll-interval", "0.5")


def live_process(config, worker):
    return next((p for p in ProcessSet(config) if p.pid == worker.pid), None)


@pytest.mark.slow
def test_remote_quiet_then_stop_of_a_real_worker(config, start_worker, redis_client):
    worker = start_worker("-c", "2", "-t", "5", *FAST)
    process = wait_until(lambda: live_process(config, worker), 15, message="a heartbeat")
    assert process.is_quiet is False and process.concurrency == 2

    process.quiet()
    wait_until(lambda: redis_client.hget(process.identity, "quiet") == b"true", 10,
               message="the heartbeat to show quiet")
    assert live_process(config, worker).stopping is True

    process.stop()
    assert worker.wait(30) == 0
    assert not redis_client.sismember(keys.PROCESSES, process.identity)
    assert live_process(config, worker) is None


@pytest.mark.slow
def test_workers_show_a_job_a_real_worker_is_running(config, start_worker, redis_client):
    jid = Client.enqueue_to("default", "tests.core.jobs.slow", 30, "busy")
    worker = start_worker("-c", "1", "-t", "1", *FAST)
    identity, tid, work = wait_until(lambda: next(iter(Workers(config)), None), 15,
                                     message="the running job in the work hash")
    assert identity == live_process(config, worker).identity
    assert (work.queue, work.job.jid, work.payload["args"]) == ("default", jid, [30, "busy"])
    assert abs((datetime.now(UTC) - work.run_at).total_seconds()) < 15
    assert Workers(config).size == 1
    ProcessSet(config).stop_all()
    assert worker.wait(30) == 0
