"""Expiring jobs: the push stamps when a job must start by; a worker skips a job past it
without running it, acknowledges it as a success, counts it and never retries it."""

import time
from datetime import UTC, datetime, timedelta

import pytest

from tests.core import expiring_jobs
from tests.support.workers import wait_until
from wurk_django.core import Client, keys
from wurk_django.core.features import PROMOTION
from wurk_django.core.payload import loads

FAST = ("--heartbeat-interval", "0.5", "--poll-interval", "0.2")


def queued(redis_client, key="queue:default") -> list[dict]:
    return [loads(raw) for raw in redis_client.lrange(key, 0, -1)]


def test_the_push_stamps_the_time_the_job_must_start_by(config, redis_client):
    before = time.time()
    expiring_jobs.hourly.perform_async("a")
    expiring_jobs.hourly.set(expires_in=timedelta(minutes=5)).perform_async("b")
    after = time.time()
    first, second = sorted(queued(redis_client), key=lambda job: job["args"])
    assert first["expires_in"] == 3600 and before + 3600 <= first["expiry"] <= after + 3600
    assert second["expires_in"] == 300 and before + 300 <= second["expiry"] <= after + 300


def test_the_clock_starts_at_the_push_even_for_a_scheduled_job(config, redis_client):
    before = time.time()
    expiring_jobs.hourly.perform_in(7200, "later")
    [raw] = redis_client.zrange(keys.SCHEDULE, 0, -1)
    assert loads(raw)["expiry"] <= time.time() + 3600 and loads(raw)["expiry"] >= before + 3600


def test_a_promoted_or_retried_job_keeps_its_stamp(config, redis_client):
    job = {"class": "tests.core.expiring_jobs.hourly", "args": ["kept"], "expires_in": 3600,
           "expiry": 1234.5}
    Client(config).push(job, origin=PROMOTION)
    [pushed] = queued(redis_client)
    assert pushed["expiry"] == 1234.5


@pytest.mark.slow
def test_a_scheduled_job_that_expires_before_it_is_due_is_skipped(config, start_worker,
                                                                 redis_client):
    expired = expiring_jobs.Digest.perform_in(2, "expired")  # due in 2 s, expired after 1
    fresh = expiring_jobs.Digest.set(expires_in=600).perform_in(2, "fresh")
    worker = start_worker(*FAST, require="tests.core.expiring_jobs")
    wait_until(lambda: redis_client.lrange("test:ran", 0, -1), 20, message="the fresh job")
    wait_until(lambda: "skipped" in worker.log(), 10, message="the expired job's skip")
    assert redis_client.lrange("test:ran", 0, -1) == [f"fresh {fresh}".encode()]
    # Skipped, not failed: never retried, not dead, acknowledged.
    assert redis_client.zcard(keys.RETRY) == 0 and redis_client.zcard(keys.DEAD) == 0
    wait_until(lambda: not list(redis_client.scan_iter("queue:default|*")), 10,
               message="both jobs acknowledged")
    assert worker.log().count(f"jid={expired} skipped") == 1
    wait_until(lambda: metric(redis_client, "p") == 2, 10, message="both in the job metrics")
    assert (metric(redis_client, "x"), metric(redis_client, "f")) == (1, 0)


@pytest.mark.slow
def test_an_expired_job_counts_as_a_success_for_its_batch(config, start_worker, redis_client):
    from wurk_django.core import Batch, BatchStatus
    with Batch() as batch:
        expiring_jobs.Digest.perform_in(2, "in-batch")  # expired once it is due
    start_worker(*FAST, require="tests.core.expiring_jobs")
    wait_until(lambda: BatchStatus(batch.bid).complete, 20, message="the batch complete")
    status = BatchStatus(batch.bid)
    assert (status.pending, status.failures, status.failed_jids) == (0, 0, [])
    assert redis_client.lrange("test:ran", 0, -1) == []  # it never ran


def metric(redis_client, kind: str) -> int:
    """A Digest job-metrics field, summed over this minute and the one before (a run
    and its flush may fall either side of a minute's turn)."""
    now = datetime.now(UTC)
    minutes = {keys.metrics_minute(now - timedelta(minutes=back)) for back in (0, 1)}
    field = f"tests.core.expiring_jobs.Digest|{kind}"
    return sum(int(redis_client.hget(minute, field) or 0) for minute in minutes)
