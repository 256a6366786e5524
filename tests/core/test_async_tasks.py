"""`async def` tasks run on one event-loop thread per worker process."""

import json

from tests.core import jobs
from tests.support.workers import wait_until
from wurk_django.core import testing


def results(redis_client):
    return [json.loads(v) for v in redis_client.lrange("test:results", 0, -1)]


def test_async_tasks_run_concurrently_on_the_loop_beside_blocking_sync_ones(
        config, start_worker, redis_client):
    jobs.gated_sync.perform_async("g")
    for index in range(3):
        jobs.async_rendezvous.perform_async(index, 4)
    start_worker("-c", "4", "--heartbeat-interval", "0.5")
    # Each async job waits until it, the two others and the sync job have all started,
    # so they finish only if the loop runs them concurrently while the sync job holds
    # its thread (blocked until the gate opens) without stalling the loop.
    wait_until(lambda: sum("async" in r for r in results(redis_client)) == 3, 20,
               message="three async jobs")
    got = results(redis_client)
    assert {r["thread"] for r in got if "async" in r} == {"wurk-asyncio"}
    assert [json.loads(s) for s in redis_client.lrange("test:started", 0, -1)] == [{"sync": "g"}]
    assert not any("sync" in r for r in got)  # it is still blocked, beside them
    redis_client.rpush("test:gate:g", "open")
    wait_until(lambda: {"sync": "g", "opened": True} in results(redis_client), 10,
               message="the sync job, once its gate opened")


def test_async_tasks_run_inline_and_in_testing_modes(config, redis_client):
    assert jobs.async_record.perform_inline("inline") is None  # what it returns
    with testing("inline"):
        jobs.async_record.perform_async("pushed")
    assert [r["async"] for r in results(redis_client)] == ["inline", "pushed"]
