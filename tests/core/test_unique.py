"""Unique jobs: the lock a push takes, the duplicates it drops, and its release by real
workers (success, start, death, a SIGKILLed worker, the poller's re-push)."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from tests.core import unique_jobs
from tests.core.test_supervisor import swarm  # noqa: F401  (a fixture)
from tests.support.workers import ROOT, wait_until, worker_env
from wurk_django.core import Client, keys
from wurk_django.core.client import send
from wurk_django.core.features import PROMOTION, REVIVAL
from wurk_django.core.payload import loads
from wurk_django.core.unique import lock_key, locked, ruby_float, ruby_json

FAST = ("--heartbeat-interval", "0.5", "--reaper-interval", "0.5", "--poll-interval", "0.2")
REQUIRE = "tests.core.unique_jobs"


def ran(redis_client, marker: str | None = None) -> list[str]:
    """The jids that ran, in order (of one marker, if given)."""
    entries = [entry.decode().split() for entry in redis_client.lrange("test:ran", 0, -1)]
    return [jid for name, jid in entries if marker is None or name == marker]


def unique_keys(redis_client) -> list[bytes]:
    return list(redis_client.scan_iter(match="unique:*"))


# --- the lock a push takes ----------------------------------------------------------

def test_a_duplicate_push_returns_none_and_is_logged(config, redis_client, caplog):
    first = unique_jobs.UniqueRecord.perform_async("a")
    with caplog.at_level("INFO", logger="wurk"):
        second = unique_jobs.UniqueRecord.perform_async("a")
    assert first is not None and second is None
    assert redis_client.llen("queue:default") == 1
    assert f"blocked by jid={first}" in caplog.text and "duplicate" in caplog.text
    assert locked(unique_jobs.UniqueRecord, ["a"]) == first
    assert locked("tests.core.unique_jobs.UniqueRecord", ["a"], queue="default") == first
    assert locked(unique_jobs.UniqueRecord, ["b"]) is None
    # Other arguments, or another queue, are another job.
    assert unique_jobs.UniqueRecord.perform_async("b") is not None
    assert unique_jobs.UniqueRecord.set(queue="other").perform_async("a") is not None


def test_the_lock_lives_unique_for_plus_the_delay_of_a_scheduled_job(config, redis_client):
    jid = unique_jobs.UniqueRecord.perform_in(300, "later")
    [key] = unique_keys(redis_client)
    assert redis_client.get(key).decode() == jid
    assert 355 <= redis_client.ttl(key) <= 360
    assert unique_jobs.UniqueRecord.perform_async("later") is None  # pending still counts


def test_unique_for_false_bypasses_the_lock(config, redis_client):
    unique_jobs.UniqueRecord.perform_async("a")
    assert unique_jobs.UniqueRecord.set(unique_for=False).perform_async("a") is not None
    assert redis_client.llen("queue:default") == 2
    assert len(unique_keys(redis_client)) == 1


def test_unique_context_picks_what_makes_a_duplicate(config, redis_client):
    assert unique_jobs.ByAccount.perform_async(7, "first") is not None
    assert unique_jobs.ByAccount.perform_async(7, "second note") is None
    assert unique_jobs.ByAccount.perform_async(8, "first") is not None


def test_a_bulk_push_drops_its_duplicates_in_place(config, redis_client):
    unique_jobs.UniqueRecord.perform_async("b")
    jids = unique_jobs.UniqueRecord.perform_bulk([["a"], ["b"], ["c"], ["a"]])
    assert [jid is not None for jid in jids] == [True, False, True, False]
    assert redis_client.llen("queue:default") == 3


def test_a_unique_push_is_one_round_trip(config, redis_client):
    Client(config).push({"class": "X", "args": [], "queue": "warm"})  # a connection open
    before = redis_client.info("stats")["total_writes_processed"]
    assert unique_jobs.UniqueRecord.perform_async("rt") is not None
    after = redis_client.info("stats")["total_writes_processed"]
    # One reply written per round trip: the first INFO's own, and the push's one EVAL.
    assert after - before == 2
    assert redis_client.llen("queue:default") == 1


def test_a_batch_counts_only_the_unique_jobs_that_go(config, redis_client):
    from wurk_django.core import Batch
    held = unique_jobs.UniqueRecord.perform_async("in-batch")
    with Batch() as batch:
        assert unique_jobs.UniqueRecord.perform_async("in-batch") is None  # held outside
        fresh = unique_jobs.UniqueRecord.perform_async("fresh")
        assert unique_jobs.UniqueRecord.perform_async("fresh") is None
    members = {m.decode() for m in redis_client.smembers(keys.batch_part(batch.bid, "jids"))}
    assert members == {fresh}
    assert redis_client.hget(keys.batch(batch.bid), "total") == b"1"
    assert sorted(loads(raw)["jid"] for raw in redis_client.lrange("queue:default", 0, -1)) \
        == sorted([held, fresh])


def test_a_batch_block_that_raises_gives_back_the_locks_its_pushes_took(config,
                                                                        redis_client):
    from wurk_django.core import Batch
    with pytest.raises(RuntimeError, match="changed my mind"):
        with Batch():
            assert unique_jobs.UniqueRecord.perform_async("dropped") is not None
            raise RuntimeError("changed my mind")
    # The block wrote nothing, so nothing may hold the job's lock: the next push goes.
    assert unique_keys(redis_client) == [] and redis_client.llen("queue:default") == 0
    jid = unique_jobs.UniqueRecord.perform_async("dropped")
    assert jid is not None
    [raw] = redis_client.lrange("queue:default", 0, -1)
    assert loads(raw)["jid"] == jid


def test_a_replayed_unique_push_is_not_written_twice(config, redis_client):
    # Reliable push replays a push whose reply was lost; it may have been applied.
    client = Client(config)
    job = client.prepare(client.normalize({"class": unique_jobs.UniqueRecord,
                                           "args": ["replayed"]}))
    deliveries = client._deliveries([job])
    assert send(client.connection, deliveries) == set()
    assert send(client.connection, deliveries) == set()  # not refused: it is its own push
    assert redis_client.llen("queue:default") == 1


def test_promotion_and_revival_never_drop_the_job_they_move(config, redis_client):
    client = Client(config)
    job = {"class": "tests.core.unique_jobs.UniqueRecord", "args": ["moved"],
           "unique_for": 60}
    holder = client.push(dict(job))
    for origin in (PROMOTION, REVIVAL):  # another jid while `holder` keeps the lock
        assert client.push(dict(job), origin=origin) is not None
    assert redis_client.llen("queue:default") == 3
    assert locked(unique_jobs.UniqueRecord, ["moved"]) == holder


def test_perform_inline_takes_and_releases_the_lock(config, redis_client):
    key = lock_key({"class": "tests.core.unique_jobs.UniqueRecord", "queue": "default",
                    "args": ["inline"]})
    redis_client.set(key, "someone-else")
    assert unique_jobs.UniqueRecord.perform_inline("inline") is None  # held: not run
    assert ran(redis_client) == []
    redis_client.delete(key)
    unique_jobs.UniqueRecord.perform_inline("inline")
    assert ran(redis_client, "inline") and not redis_client.exists(key)


# --- the key: Sidekiq Enterprise's digest, hashed alike by Ruby and Python -------------

@pytest.mark.parametrize("number", [1e20, 1.5e-7, 100.0, 1e15, 123456789012345.0, 1e16,
                                    0.0001, 1e-05, -0.0, 0.1, 1 / 3, -2.5e300, 5e-324])
def test_floats_are_written_as_ruby_writes_them(number):
    from tests.support.ruby import missing_sidekiq
    if missing_sidekiq() is not None:
        pytest.skip(missing_sidekiq())
    ruby = subprocess.run(["ruby", "-rjson", "-e", f"print JSON.generate([{number!r}])"],
                          capture_output=True, text=True, check=True).stdout
    assert f"[{ruby_float(number)}]" == ruby


def test_ruby_and_python_hash_the_same_job_to_the_same_lock(config, redis_client, redis_url):
    from tests.support.ruby import require_sidekiq
    require_sidekiq()
    cases = [[1, "two", {"k": [3.5, None, True]}], ["é ✓ \u2028 /\\\"\n"], [1e20, 2**70],
             [], [{"nested": {"deep": [1.0, -0.0, 1e-7]}}]]
    script = ('require "json"; require "digest"; '
              'cases = JSON.parse($stdin.read); '
              'print JSON.generate(cases.map { |args| '
              'Digest::SHA256.hexdigest(JSON.generate(["tests.core.unique_jobs.UniqueRecord", '
              '"default", args])) })')
    digests = json.loads(subprocess.run(["ruby", "-e", script], input=json.dumps(cases),
                                        capture_output=True, text=True, check=True).stdout)
    ours = [lock_key({"class": "tests.core.unique_jobs.UniqueRecord", "queue": "default",
                      "args": args}) for args in cases]
    assert ours == [keys.unique(digest) for digest in digests]
    # A lock a Ruby process took (SET NX EX, its jid) blocks the Python push.
    redis_client.set(keys.unique(digests[0]), "ruby-jid", ex=60, nx=True)
    assert unique_jobs.UniqueRecord.perform_async(*cases[0]) is None
    assert ruby_json(cases[2]) == b"[1.0e+20,1180591620717411303424]"


# --- with real workers ----------------------------------------------------------------

PUSHER = """
import json, sys, threading
import redis
from wurk_django.core import Config, set_default_config
from tests.core.unique_jobs import UniqueRecord
url = sys.argv[1]
set_default_config(Config(redis_url=url))
gate = redis.Redis.from_url(url)
jids = []
def push():
    gate.brpoplpush("test:go", "test:go", timeout=30)  # every thread of both processes
    jids.append(UniqueRecord.perform_async("race"))
threads = [threading.Thread(target=push) for _ in range(10)]
for thread in threads:
    thread.start()
gate.rpush("test:ready", 1)
for thread in threads:
    thread.join()
print(json.dumps(jids))
"""


def test_20_threads_in_2_processes_pushing_one_unique_job_leave_one_in_redis(redis_url,
                                                                           redis_client):
    pushers = [subprocess.Popen([sys.executable, "-c", PUSHER, redis_url], cwd=ROOT,
                                env=worker_env(redis_url), stdout=subprocess.PIPE, text=True)
               for _ in range(2)]
    wait_until(lambda: redis_client.llen("test:ready") == 2, 30, message="both pushers up")
    redis_client.rpush("test:go", "go")  # released together: each thread BRPOPLPUSHes it back
    jids = [jid for pusher in pushers for jid in json.loads(pusher.communicate(timeout=60)[0])]
    assert len(jids) == 20
    pushed = [jid for jid in jids if jid is not None]
    assert len(pushed) == 1
    assert [loads(raw)["jid"] for raw in redis_client.lrange("queue:default", 0, -1)] == pushed


@pytest.mark.slow
def test_a_scheduled_unique_job_runs_at_its_time(config, start_worker, redis_client):
    jid = unique_jobs.UniqueRecord.perform_in(1, "scheduled")
    assert unique_jobs.UniqueRecord.perform_in(1, "scheduled") is None
    start_worker(*FAST, require=REQUIRE)
    wait_until(lambda: ran(redis_client, "scheduled"), 20, message="the scheduled job's run")
    assert ran(redis_client, "scheduled") == [jid]  # its own re-push was no duplicate
    wait_until(lambda: not unique_keys(redis_client), 10, message="the lock released")


@pytest.mark.slow
def test_a_failing_unique_job_is_retried_not_dropped_at_its_promotion(config, start_worker,
                                                                      redis_client):
    jid = unique_jobs.FailsOnce.perform_async("flaky")
    start_worker(*FAST, require=REQUIRE)
    wait_until(lambda: redis_client.zcard(keys.RETRY) == 1, 20, message="the retry")
    assert locked(unique_jobs.FailsOnce, ["flaky"]) == jid  # the retry keeps the lock
    assert unique_jobs.FailsOnce.perform_async("flaky") is None
    # The lock lapses (its TTL) and another job takes it: the retry, promoted by the
    # poller, must still run rather than be dropped as that job's duplicate.
    key = lock_key({"class": "tests.core.unique_jobs.FailsOnce", "queue": "default",
                    "args": ["flaky"]})
    redis_client.set(key, "another-jid", ex=60)
    [member] = redis_client.zrange(keys.RETRY, 0, -1)
    redis_client.zadd(keys.RETRY, {member: time.time() - 1}, xx=True)  # due now
    wait_until(lambda: ran(redis_client, "flaky"), 20, message="the retried run")
    assert ran(redis_client, "flaky") == [jid]
    assert redis_client.get(key) == b"another-jid"  # not its lock: left alone


@pytest.mark.slow
def test_a_unique_job_that_dies_releases_its_lock(config, start_worker, redis_client):
    jid = unique_jobs.DiesAtOnce.perform_async("doomed")
    assert locked(unique_jobs.DiesAtOnce, ["doomed"]) == jid
    start_worker(*FAST, require=REQUIRE)
    wait_until(lambda: redis_client.zcard(keys.DEAD) == 1, 20, message="the death")
    wait_until(lambda: locked(unique_jobs.DiesAtOnce, ["doomed"]) is None, 10,
               message="the lock released by the death hook")
    assert unique_jobs.DiesAtOnce.perform_async("doomed") is not None


@pytest.mark.slow
def test_unique_until_start_lets_a_new_push_in_while_the_first_runs(config, start_worker,
                                                                    redis_client):
    first = unique_jobs.GatedStart.perform_async("start")
    held = unique_jobs.GatedSuccess.perform_async("success")
    start_worker(*FAST, "-c", "4", require=REQUIRE)
    wait_until(lambda: redis_client.llen("test:started") == 2, 20, message="both running")
    # Running now: the "start" lock is gone, the "success" one is held until it returns.
    second = unique_jobs.GatedStart.perform_async("start")
    assert second is not None and second != first
    assert unique_jobs.GatedSuccess.perform_async("success") is None
    redis_client.rpush("test:gate:start", 1, 1)
    redis_client.rpush("test:gate:success", 1)
    wait_until(lambda: len(ran(redis_client)) == 3, 20, message="every run")
    assert sorted(ran(redis_client, "start")) == sorted([first, second])
    assert ran(redis_client, "success") == [held]
    wait_until(lambda: not unique_keys(redis_client), 10, message="both locks released")


@pytest.mark.slow
def test_a_sigkilled_worker_leaves_no_lock_past_its_ttl_and_the_job_still_runs(
        config, swarm, redis_client):  # noqa: F811 - the fixture imported above
    jid = unique_jobs.HangsFirstTime.perform_async("killed")
    [key] = unique_keys(redis_client)
    # Two processes under a supervisor: it replaces the child killed below, and the new
    # child's reaper gives the dead one's job back (same image: its pid is checked).
    swarm(*FAST, "-p", "2", require=REQUIRE)
    wait_until(lambda: redis_client.llen("test:started") == 1, 30, message="the first run")
    victim = int(redis_client.lindex("test:started", 0).split()[-1])
    os.kill(victim, signal.SIGKILL)
    # The lock outlives its holder only until its TTL: it can never be held for good.
    assert redis_client.get(key).decode() == jid and 0 < redis_client.ttl(key) <= 30
    wait_until(lambda: ran(redis_client, "killed"), 30, message="the reclaimed run")
    assert ran(redis_client, "killed") == [jid]
    assert redis_client.llen("test:started") == 2
    wait_until(lambda: not redis_client.exists(key), 10, message="the lock released")
