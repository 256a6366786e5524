"""`--fetch basic` (Sidekiq OSS's BRPOP): a real worker fetches and runs jobs without any
private list, gives a running job back at shutdown, and honours queue pause."""

import json
import signal
import threading

import pytest

from tests.core import jobs
from tests.support.workers import wait_until
from wurk_django.core.api.queues import Queue
from wurk_django.core.config import Config
from wurk_django.core.fetch.basic import BasicFetch
from wurk_django.core.payload import dumps, loads
from wurk_django.core.redis import connection_for

FAST = ("--fetch", "basic", "--heartbeat-interval", "0.5", "--poll-interval", "0.5")


def results(redis_client) -> list:
    return [json.loads(v) for v in redis_client.lrange("test:results", 0, -1)]


def private_lists(redis_client) -> list[bytes]:
    return list(redis_client.scan_iter(match="queue:*|*"))


# --- a real worker process ------------------------------------------------------------

@pytest.mark.slow
def test_a_basic_worker_runs_jobs_holds_none_in_redis_and_gives_back_a_running_one(
        config, start_worker, redis_client):
    for value in range(20):
        jobs.record.perform_async(value)
    jid = jobs.slow.perform_async(60, "long")
    worker = start_worker("-c", "3", "-t", "1", *FAST)
    worker.wait_for_log("fetch basic")
    wait_until(lambda: len(results(redis_client)) == 20, 15, message="twenty jobs")
    wait_until(lambda: redis_client.lrange("test:started", 0, -1), 10, message="the slow job")
    assert sorted(results(redis_client)) == list(range(20))
    # The running job is nowhere in Redis: BRPOP removed it and no private list holds it
    # (a reliable fetcher would keep it in `queue:default|<host>|<pid>|...`).
    assert redis_client.llen("queue:default") == 0
    assert private_lists(redis_client) == []
    worker.send(signal.SIGTERM)
    assert worker.wait(20) == 0
    # Past the 1 s timeout the job was pushed back to the fetching end of its queue.
    [back] = redis_client.lrange("queue:default", 0, -1)
    assert loads(back)["jid"] == jid
    assert redis_client.lrange("test:finished", 0, -1) == []
    assert f"requeueing jobs {jid}" in worker.log()
    assert private_lists(redis_client) == []


@pytest.mark.slow
def test_a_basic_worker_skips_a_paused_queue_until_it_is_unpaused(config, start_worker,
                                                                  redis_client):
    Queue("critical", config).pause()
    jobs.record_critical.perform_async("held")
    jobs.record.perform_async("free")
    # One thread, strict order: a fetcher blind to the pause takes `held` first.
    start_worker("-c", "1", "-q", "critical", "-q", "default", *FAST)
    wait_until(lambda: results(redis_client), 15, message="the job of the running queue")
    assert results(redis_client) == ["free"]
    assert redis_client.llen("queue:critical") == 1
    Queue("critical", config).unpause()
    wait_until(lambda: len(results(redis_client)) == 2, 10, message="the unpaused job")
    assert results(redis_client) == ["free", ["critical", "held"]]


# --- the fetcher in this process -------------------------------------------------------

@pytest.fixture
def basic_fetcher(config):
    cfg = Config(redis_url=config.redis_url, queues=("critical", "default"))
    return BasicFetch(cfg, cfg.capsules_[0], connection_for(cfg))


def job(value, queue="default") -> bytes:
    return dumps({"class": "Some", "args": [value], "queue": queue, "jid": f"{value:024x}"})


def test_a_pause_through_the_api_is_seen_at_once_by_this_process(basic_fetcher, config,
                                                                 redis_client):
    assert basic_fetcher.paused_queues() == frozenset()  # cached for the next 2 s
    redis_client.lpush("queue:critical", job(1, "critical"))
    redis_client.lpush("queue:default", job(2))
    Queue("critical", config).pause()
    assert basic_fetcher.retrieve_work().queue == "default"
    Queue("critical", config).unpause()
    assert basic_fetcher.retrieve_work().queue == "critical"


def test_a_fetcher_parked_on_a_queue_paused_here_gives_its_job_back(basic_fetcher, config,
                                                                    redis_client):
    got = []
    parked = threading.Thread(target=lambda: got.append(basic_fetcher.retrieve_work()))
    parked.start()
    wait_until(lambda: redis_client.info("clients")["blocked_clients"] == 1, 5,
               message="the fetcher parked in BRPOP")
    Queue("default", config).pause()
    redis_client.lpush("queue:default", job(3))
    parked.join(10)
    assert got == [None]
    assert redis_client.lrange("queue:default", 0, -1) == [job(3)]


def test_with_every_queue_paused_nothing_is_popped(basic_fetcher, config, redis_client):
    for name in ("critical", "default"):
        Queue(name, config).pause()
    redis_client.lpush("queue:default", job(4))
    redis_client.config_resetstat()
    basic_fetcher.quiet()  # the fetcher waits out a block for nothing, unless quieted
    assert basic_fetcher.retrieve_work() is None
    assert "cmdstat_brpop" not in redis_client.info("commandstats")
    assert redis_client.llen("queue:default") == 1
