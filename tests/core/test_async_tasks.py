"""`async def` tasks run on one event-loop thread per worker process."""

import json

from tests.core import jobs
from tests.support.workers import wait_until
from wurk_django.core import testing


def results(redis_client):
    return [json.loads(v) for v in redis_client.lrange("test:results", 0, -1)]


def test_async_tasks_run_concurrently_on_the_loop_beside_blocking_sync_ones(
        config, start_worker, redis_client):
    jobs.blocking_sync.perform_async(3)
    for index in range(6):
        jobs.async_record.perform_async(index, 0.2)
    start_worker("-c", "4", "--heartbeat-interval", "0.5")
    # The sync job blocks a processor thread for 3 s; the async ones finish meanwhile.
    wait_until(lambda: sum("async" in r for r in results(redis_client)) == 6, 10,
               message="six async jobs")
    got = results(redis_client)
    async_results = [r for r in got if "async" in r]
    assert {r["thread"] for r in async_results} == {"wurk-asyncio"}
    assert not any("sync" in r for r in got)  # still sleeping: the loop did not wait for it
    wait_until(lambda: any("sync" in r for r in results(redis_client)), 10, message="sync job")


def test_async_tasks_run_inline_and_in_testing_modes(config, redis_client):
    assert jobs.async_record.perform_inline("inline") is None  # what it returns
    with testing("inline"):
        jobs.async_record.perform_async("pushed")
    assert [r["async"] for r in results(redis_client)] == ["inline", "pushed"]
