"""The batch guarantees, each with real worker processes: callbacks fire exactly once and
only when earned, whatever the jobs go through (retries, promotions, scheduling, reclaims,
duplicates, death and revival, cancellation), children before parents."""

import json
import signal

import pytest

from tests.core import batch_jobs
from tests.core.batch_jobs import events
from tests.support.workers import wait_until
from wurk_django.core import Batch, BatchStatus, keys
from wurk_django.core.api import DeadSet, RetrySet
from wurk_django.core.payload import dumps, loads

pytestmark = pytest.mark.slow

FAST = ("-c", "5", "--poll-interval", "0.5", "--heartbeat-interval", "0.5",
        "--reaper-interval", "1")
REQUIRE = "tests.core.batch_jobs"


@pytest.fixture
def worker(start_worker):
    def start(*extra):
        return start_worker(*FAST, *extra, require=REQUIRE)
    return start


def callbacks(redis_client, bid=None) -> list[dict]:
    return [event for event in events(redis_client, "callbacks")
            if bid is None or event["bid"] == bid]


def fired(redis_client, bid) -> list[str]:
    return [event["event"] for event in callbacks(redis_client, bid)]


def runs(redis_client) -> dict[str, int]:
    return {k.decode(): int(v) for k, v in redis_client.hgetall("test:runs").items()}


def hurry_retries(redis_client) -> int:
    """Make every booked retry due now, so the poller promotes it at its next pass."""
    members = redis_client.zrange(keys.RETRY, 0, -1)
    if members:
        redis_client.zadd(keys.RETRY, {member: 0 for member in members}, xx=True)
    return len(members)


def kill(redis_client, worker) -> None:
    """SIGKILL a worker, and drop its heartbeat as its expiry (60 s) would, so the next
    worker's reaper takes its jobs back now rather than in a minute."""
    worker.send(signal.SIGKILL)
    worker.wait(10)
    for member in redis_client.smembers(keys.PROCESSES):
        if f":{worker.pid}:" in member.decode():
            redis_client.delete(member)


def held_by(redis_client, pid: int) -> int:
    """Jobs still in a process's private lists."""
    return sum(redis_client.llen(key) for key in redis_client.scan_iter("queue:*|*")
               if f"|{pid}|" in key.decode())


def settled(redis_client, bid) -> bool:
    return BatchStatus(bid).success and redis_client.llen("queue:default") == 0


def hurried_until(redis_client, bid, events_wanted: int) -> bool:
    """One step of waiting for a batch's callbacks while making its retries due."""
    hurry_retries(redis_client)
    return len(fired(redis_client, bid)) >= events_wanted


def test_complete_and_success_fire_once_after_every_job_ran(config, worker, redis_client):
    with Batch(on_complete=(batch_jobs.Recorder, {"n": 1}),
               on_success=(batch_jobs.Recorder, {"n": 2}),
               on_death=batch_jobs.Recorder) as batch:
        jids = [batch_jobs.Work.perform_async() for _ in range(50)]
    worker()
    wait_until(lambda: len(callbacks(redis_client)) >= 2, 30, message="both callbacks")
    wait_until(lambda: settled(redis_client, batch.bid), 10, message="the batch settled")
    got = {event["event"]: event for event in callbacks(redis_client)}
    assert sorted(fired(redis_client, batch.bid)) == ["complete", "success"]
    assert (got["complete"]["options"], got["success"]["options"]) == ({"n": 1}, {"n": 2})
    assert got["complete"]["ran"] == got["success"]["ran"] == 50  # every job ran first
    assert runs(redis_client) == dict.fromkeys(jids, 1)
    status = BatchStatus(batch.bid)
    assert (status.total, status.pending, status.failures) == (50, 0, 0)
    assert status.complete and status.success and not status.dead
    assert 0 < redis_client.ttl(keys.batch(batch.bid)) <= 24 * 3600  # lingers a day


def test_an_empty_batch_still_fires(config, worker, redis_client):
    with Batch(on_complete=batch_jobs.Recorder, on_success=batch_jobs.Recorder) as batch:
        pass
    worker()
    wait_until(lambda: len(fired(redis_client, batch.bid)) == 2, 30, message="callbacks")
    assert sorted(fired(redis_client, batch.bid)) == ["complete", "success"]
    assert BatchStatus(batch.bid).total == 0


def quiet(redis_client) -> bool:
    """Nothing queued, nothing held in a private list: every job ran and was acked, and a
    callback job one of them fired (before its ack) has run too."""
    return (redis_client.llen("queue:default") == 0
            and not any(redis_client.llen(key) for key in redis_client.scan_iter("queue:*|*")))


def test_callbacks_by_path_and_by_method_of_the_callback_class_run(config, worker,
                                                                   redis_client):
    with Batch(callback_class=batch_jobs.Recorder, on_complete="#named",
               on_success=("tests.core.batch_jobs.Recorder#named", {"by": "path"})) as batch:
        batch_jobs.Work.perform_async()
    worker()
    wait_until(lambda: len(callbacks(redis_client, batch.bid)) == 2, 30, message="callbacks")
    assert sorted(json.dumps(event["options"]) for event in callbacks(redis_client, batch.bid)
                  ) == ['{"by": "path"}', "{}"]
    assert fired(redis_client, batch.bid) == ["named", "named"]


def test_a_job_delivered_twice_is_counted_once(config, worker, redis_client):
    with Batch(on_complete=batch_jobs.Recorder, on_success=batch_jobs.Recorder) as batch:
        first, second = batch_jobs.Work.perform_async(), batch_jobs.Work.perform_async()
    # The same bytes twice in the queue: what a reclaim after a crash or a requeue at
    # shutdown delivers for a job that had already run.
    raw = next(raw for raw in redis_client.lrange("queue:default", 0, -1)
               if loads(raw)["jid"] == first)
    redis_client.rpush("queue:default", raw)
    worker()
    wait_until(lambda: runs(redis_client).get(first) == 2 and second in runs(redis_client),
               30, message="the duplicate ran")
    wait_until(lambda: len(fired(redis_client, batch.bid)) == 2 and quiet(redis_client), 10,
               message="the callbacks")
    status = BatchStatus(batch.bid)
    assert (status.total, status.pending) == (2, 0)
    # Once more after the batch succeeded: the late run re-drives the fire, which finds
    # both events fired.
    redis_client.rpush("queue:default", raw)
    wait_until(lambda: runs(redis_client)[first] == 3 and quiet(redis_client), 30,
               message="the late duplicate and anything it fired")
    assert sorted(fired(redis_client, batch.bid)) == ["complete", "success"]
    assert BatchStatus(batch.bid).pending == 0


def test_retried_and_promoted_jobs_neither_count_again_nor_finish_early(config, worker,
                                                                        redis_client):
    with Batch(on_complete=batch_jobs.Recorder, on_success=batch_jobs.Recorder) as batch:
        flaky = [batch_jobs.FailsTwice.perform_async() for _ in range(3)]
        steady = [batch_jobs.Work.perform_async() for _ in range(3)]
    worker()
    wait_until(lambda: redis_client.zcard(keys.RETRY) == 3, 30, message="three retries")
    status = BatchStatus(batch.bid)
    assert (status.total, status.pending, status.failures) == (6, 3, 3)
    assert sorted(status.failed_jids) == sorted(flaky)
    assert fired(redis_client, batch.bid) == []  # failing jobs have not run to the end
    # Each flaky job fails twice, then succeeds; its retries are promoted by the poller.
    wait_until(lambda: hurried_until(redis_client, batch.bid, 2), 60, message="callbacks")
    assert sorted(fired(redis_client, batch.bid)) == ["complete", "success"]
    assert all(event["ran"] == 6 for event in callbacks(redis_client, batch.bid))
    status = BatchStatus(batch.bid)
    assert (status.total, status.pending, status.failures) == (6, 0, 0)
    assert sorted(runs(redis_client)) == sorted(flaky + steady)


def test_a_job_scheduled_inside_the_block_keeps_the_batch_open_until_it_ran(
        config, worker, redis_client):
    with Batch(on_complete=batch_jobs.Recorder, on_success=batch_jobs.Recorder) as batch:
        now = batch_jobs.Work.perform_async()
        later = batch_jobs.Work.perform_in(2)
    worker()
    wait_until(lambda: now in runs(redis_client), 30, message="the immediate job")
    assert fired(redis_client, batch.bid) == []
    wait_until(lambda: len(fired(redis_client, batch.bid)) == 2, 30, message="callbacks")
    assert later in runs(redis_client)
    assert all(event["ran"] == 2 for event in callbacks(redis_client, batch.bid))


def test_a_job_reclaimed_from_a_killed_worker_counts_once(config, worker, redis_client):
    with Batch(on_success=batch_jobs.Recorder) as batch:
        gated = batch_jobs.Work.perform_async(0, "reclaim")
        done = batch_jobs.Work.perform_async()
    first = worker()
    wait_until(lambda: done in runs(redis_client)
               and redis_client.llen("queue:default") == 0, 30, message="the gated job held")
    kill(redis_client, first)
    worker()  # its reaper gives the killed process's job back
    wait_until(lambda: not held_by(redis_client, first.pid), 20, message="the reclaim")
    redis_client.rpush("test:gate:reclaim", "go")
    wait_until(lambda: fired(redis_client, batch.bid) == ["success"], 40, message="success")
    assert runs(redis_client) == {gated: 1, done: 1}
    assert BatchStatus(batch.bid).total == 2


def test_jobs_finishing_while_a_block_is_open_do_not_fire_it(config, worker, redis_client):
    with Batch(on_complete=batch_jobs.Recorder, on_success=batch_jobs.Recorder) as batch:
        first = batch_jobs.Work.perform_async()
    with Batch(batch.bid):
        worker()
        wait_until(lambda: first in runs(redis_client), 30, message="the first job")
        wait_until(lambda: BatchStatus(batch.bid).pending == 1, 10, message="its ack")
        second = batch_jobs.Work.perform_async()
        assert fired(redis_client, batch.bid) == []  # the block's hold keeps it open
    wait_until(lambda: len(fired(redis_client, batch.bid)) == 2, 30, message="callbacks")
    assert second in runs(redis_client)
    assert all(event["ran"] == 2 for event in callbacks(redis_client, batch.bid))


def test_a_job_adds_siblings_and_the_batch_waits_for_them(config, worker, redis_client):
    with Batch(on_success=batch_jobs.Recorder) as batch:
        batch_jobs.AddsSibling.perform_async(300)
        batch_jobs.function_sibling.perform_async("f")
    worker()
    wait_until(lambda: fired(redis_client, batch.bid) == ["success"], 30, message="success")
    # Every counting job (both siblings and AddsSibling; the function task counts in
    # `test:function`) had run when the callback did.
    assert [event["ran"] for event in callbacks(redis_client, batch.bid)] == [3]
    assert events(redis_client, "siblings") == [[batch.bid, True]]
    assert events(redis_client, "function") == [["f", batch.bid]]
    assert BatchStatus(batch.bid).total == 4


def test_children_fire_before_their_parent_and_its_success_waits_for_theirs(
        config, worker, redis_client):
    with Batch(description="parent", on_complete=batch_jobs.Recorder,
               on_success=batch_jobs.Recorder) as parent:
        with Batch(description="child", on_complete=batch_jobs.Recorder,
                   on_success=batch_jobs.Recorder) as child:
            flaky = batch_jobs.FailsTwice.perform_async()
        batch_jobs.OpensChild.perform_async(3, "grandchild")  # a child made by a job
        batch_jobs.Work.perform_async()
    worker()
    wait_until(lambda: redis_client.zcard(keys.RETRY) == 1, 30, message="the retry")
    wait_until(lambda: events(redis_client, "children"), 30, message="the job's child")
    [[_, job_child]] = events(redis_client, "children")
    wait_until(lambda: len(fired(redis_client, job_child)) == 2, 30, message="job child")
    assert fired(redis_client, parent.bid) == []  # the flaky child has not even run out
    wait_until(lambda: hurried_until(redis_client, parent.bid, 2), 60,
               message="the parent's callbacks")
    order = [(event["bid"], event["event"]) for event in callbacks(redis_client)]
    for kid in (child.bid, job_child):
        assert order.index((kid, "complete")) < order.index((parent.bid, "complete"))
        assert order.index((kid, "success")) < order.index((parent.bid, "success"))
    assert len(order) == len(set(order)) == 6
    assert BatchStatus(job_child).parent_bid == parent.bid
    assert runs(redis_client)[flaky] == 1


def test_death_fires_once_up_the_tree_and_a_retried_dead_job_brings_the_batch_back(
        config, worker, redis_client):
    with Batch(on_death=batch_jobs.Recorder, on_complete=batch_jobs.Recorder,
               on_success=batch_jobs.Recorder) as parent:
        with Batch(on_death=batch_jobs.Recorder, on_success=batch_jobs.Recorder) as child:
            doomed = [batch_jobs.FailsUntilAllowed.perform_async() for _ in range(2)]
        batch_jobs.Work.perform_async()
    worker()
    wait_until(lambda: redis_client.zcard(keys.DEAD) == 2, 30, message="two deaths")
    wait_until(lambda: "complete" in fired(redis_client, parent.bid), 30,
               message="the parent completes with a death in it")
    assert fired(redis_client, child.bid) == ["death"]  # once, for two deaths
    assert sorted(fired(redis_client, parent.bid)) == ["complete", "death"]
    status = BatchStatus(child.bid)
    assert status.dead and sorted(status.dead_jids) == sorted(doomed)
    assert (status.pending, status.failures) == (2, 0)
    dead_batches = {m.decode() for m in redis_client.zrange(keys.DEAD_BATCHES, 0, -1)}
    assert dead_batches == {child.bid, parent.bid}

    redis_client.set("test:allow", "1")  # the bug is fixed: retry them from the dead set
    assert DeadSet(config).retry_all() == 2
    wait_until(lambda: settled(redis_client, parent.bid), 30, message="parent success")
    assert sorted(fired(redis_client, child.bid)) == ["death", "success"]
    assert sorted(fired(redis_client, parent.bid)) == ["complete", "death", "success"]
    status = BatchStatus(child.bid)
    assert not status.dead and status.dead_jids == [] and status.total == 2
    assert redis_client.zcard(keys.DEAD_BATCHES) == 0


def test_an_invalidated_batch_skips_its_jobs_and_still_finishes(config, worker,
                                                                 redis_client):
    with Batch(on_success=batch_jobs.Recorder) as batch:
        skipped = [batch_jobs.Work.set(queue="later").perform_async() for _ in range(3)]
    assert batch.invalidate_all() == 1
    worker("-q", "later", "-q", "default")
    wait_until(lambda: fired(redis_client, batch.bid) == ["success"], 30, message="success")
    assert not any(jid in runs(redis_client) for jid in skipped)
    assert BatchStatus(batch.bid).pending == 0


def test_a_running_job_sees_its_batch_invalidated(config, worker, redis_client):
    with Batch(on_success=batch_jobs.Recorder) as batch:
        checks = batch_jobs.Checks.perform_async()
    with Batch(batch.bid):
        worker()
        wait_until(lambda: events(redis_client, "validity"), 30, message="the first check")
        batch.invalidate_all()
        late = batch_jobs.Checks.perform_async()
    wait_until(lambda: fired(redis_client, batch.bid) == ["success"], 30, message="success")
    assert events(redis_client, "validity") == [[checks, True]]
    assert late not in runs(redis_client)  # skipped: its batch was invalidated


def test_a_callback_that_cannot_be_found_goes_to_dead_and_a_failing_one_retries(
        config, worker, redis_client):
    with Batch(on_success="tests.core.nowhere.Callbacks") as lost:
        batch_jobs.Work.perform_async()
    with Batch(on_success=batch_jobs.BrokenCallback) as broken:
        batch_jobs.Work.perform_async()
    worker()
    wait_until(lambda: redis_client.zcard(keys.DEAD) == 1, 30, message="the dead callback")
    wait_until(lambda: redis_client.zcard(keys.RETRY) == 1, 30, message="the retry")
    [dead] = [loads(raw) for raw in redis_client.zrange(keys.DEAD, 0, -1)]
    assert dead["class"] == "wurk.batch.CallbackJob" and dead["args"][0] == lost.bid
    assert dead["retry_count"] == 0 and "cannot be imported" in dead["error_message"]
    [retrying] = [loads(raw) for raw in redis_client.zrange(keys.RETRY, 0, -1)]
    assert retrying["args"][0] == broken.bid and "callback body" in retrying["error_message"]
    assert RetrySet(config).size == 1


def test_a_callback_job_survives_a_sigkill_of_its_worker(config, worker, redis_client):
    with Batch(on_success=batch_jobs.SlowRecorder) as batch:
        batch_jobs.Work.perform_async()
    first = worker()
    wait_until(lambda: events(redis_client, "callback_started"), 30, message="callback")
    kill(redis_client, first)
    redis_client.rpush("test:gate:callback", "go")  # for the run after the reclaim
    worker()
    wait_until(lambda: fired(redis_client, batch.bid) == ["success"], 40,
               message="the reclaimed callback")
    started = events(redis_client, "callback_started")
    assert len(started) == 2 and started[0][1] == first.pid != started[1][1]


def test_a_job_another_feature_set_aside_is_neither_success_nor_failure(
        config, worker, redis_client):
    with Batch(on_success=batch_jobs.Recorder) as batch:
        batch_jobs.Work.perform_async()
    raw = redis_client.lpop("queue:default")
    job = loads(raw)
    redis_client.rpush("queue:default", dumps({**job, "set_aside": True}))
    worker()
    wait_until(lambda: fired(redis_client, batch.bid) == ["success"], 30, message="success")
    assert events(redis_client, "set_aside") == [job["jid"]]
    assert runs(redis_client) == {job["jid"]: 1}
    status = BatchStatus(batch.bid)
    assert (status.total, status.failures) == (1, 0)
