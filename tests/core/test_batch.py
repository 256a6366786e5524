"""Batches on the client side, against the suite's Redis: what a block writes and when,
children, callback registration and its checks, options, cancellation, the testing
modes, and BatchStatus."""

import asyncio
import json
import threading

import pytest

from tests.core import batch_jobs
from wurk_django.core import Batch, BatchStatus, Client, Config, keys, set_default_config
from wurk_django.core.errors import BatchError, BatchNotFoundError, CallbackTargetError
from wurk_django.core.payload import loads
from wurk_django.core.testing_modes import testing


def queued(redis_client, queue="default") -> list[dict]:
    return [loads(raw) for raw in redis_client.lrange(f"queue:{queue}", 0, -1)]


def fields(redis_client, bid) -> dict:
    return {k.decode(): v.decode() for k, v in redis_client.hgetall(keys.batch(bid)).items()}


def members(redis_client, bid, part) -> set[str]:
    return {m.decode() for m in redis_client.smembers(keys.batch_part(bid, part))}


def test_a_block_writes_its_batch_and_jobs_at_its_exit(config, redis_client):
    with Batch(description="import", tags=["nightly"]) as batch:
        jids = [batch_jobs.Work.perform_async() for _ in range(3)]
        assert redis_client.llen("queue:default") == 0  # nothing before the exit
        assert not redis_client.exists(keys.batch(batch.bid))
    jobs = queued(redis_client)
    assert sorted(job["jid"] for job in jobs) == sorted(jids)
    assert {job["bid"] for job in jobs} == {batch.bid}
    stored = fields(redis_client, batch.bid)
    assert (stored["total"], stored["pending"], stored["description"]) == ("3", "3", "import")
    assert members(redis_client, batch.bid, "jids") == set(jids)  # the hold is released
    assert redis_client.zscore(keys.BATCHES, batch.bid) is not None
    assert redis_client.sismember(keys.batch_tag("nightly"), batch.bid)
    assert 0 < redis_client.ttl(keys.batch(batch.bid)) <= 30 * 24 * 3600


def test_a_block_that_raises_writes_none_of_its_jobs(config, redis_client):
    with pytest.raises(RuntimeError), Batch() as batch:
        batch_jobs.Work.perform_async()
        raise RuntimeError("the import failed")
    assert redis_client.llen("queue:default") == 0
    assert not redis_client.exists(keys.batch(batch.bid))
    # An inner block that raises is dropped, the outer one goes on.
    with Batch() as outer:
        kept = batch_jobs.Work.perform_async()
        try:
            with Batch() as inner:
                batch_jobs.Work.perform_async()
                raise ValueError
        except ValueError:
            pass
    assert [job["jid"] for job in queued(redis_client)] == [kept]
    assert not redis_client.exists(keys.batch(inner.bid))
    assert members(redis_client, outer.bid, "kids") == set()


def test_bulk_and_scheduled_pushes_inside_a_block_are_counted_at_once(config, redis_client):
    with Batch() as batch:
        bulk = batch_jobs.Work.perform_bulk([[]] * 2_500)
        later = batch_jobs.Work.perform_in(3600)
    assert len(queued(redis_client)) == 2_500
    [(member, _)] = redis_client.zrange(keys.SCHEDULE, 0, -1, withscores=True)
    assert loads(member)["jid"] == later and loads(member)["bid"] == batch.bid
    assert fields(redis_client, batch.bid)["total"] == "2501"
    assert members(redis_client, batch.bid, "jids") == {*bulk, later}


def test_a_batch_opened_inside_another_block_is_its_child(config, redis_client):
    with Batch(description="parent") as parent:
        batch_jobs.Work.perform_async()
        with Batch(description="child") as child:
            batch_jobs.Work.perform_async()
        with parent:  # the same batch again: it shares the outer block
            batch_jobs.Work.perform_async()
    assert child.parent_bid == parent.bid
    assert fields(redis_client, child.bid)["parent_bid"] == parent.bid
    for part in ("kids", "pkids", "skids"):
        assert members(redis_client, parent.bid, part) == {child.bid}
    assert fields(redis_client, parent.bid)["total"] == "2"
    assert BatchStatus(parent.bid).child_bids == [child.bid]


def test_a_block_reopening_a_batch_from_outside_holds_it_until_its_exit(config, redis_client):
    with Batch() as batch:
        first = batch_jobs.Work.perform_async()
    with Batch(batch.bid):
        holds = members(redis_client, batch.bid, "jids") - {first}
        assert len(holds) == 1 and holds.pop().startswith("hold:")
        assert fields(redis_client, batch.bid)["pending"] == "2"
        second = batch_jobs.Work.perform_async()
    assert members(redis_client, batch.bid, "jids") == {first, second}
    assert fields(redis_client, batch.bid)["pending"] == "2"
    # A reopening block that raises drops its jobs but not the batch.
    with pytest.raises(KeyError), Batch(batch.bid):
        batch_jobs.Work.perform_async()
        raise KeyError
    assert members(redis_client, batch.bid, "jids") == {first, second}


def test_a_block_with_nothing_to_wait_for_leaves_a_no_op_job_to_fire_it(config, redis_client):
    with Batch(callback_queue="callbacks") as batch:
        pass
    [job] = queued(redis_client, "callbacks")
    assert (job["class"], job["bid"]) == ("Sidekiq::Batch::Empty", batch.bid)
    assert members(redis_client, batch.bid, "jids") == {job["jid"]}


def test_batch_create_writes_once_whatever_runs_it_again(config, redis_client):
    for _ in range(2):
        with Batch.create("step-1", description="once"):
            batch_jobs.Work.perform_async()
    assert len(queued(redis_client)) == 1
    assert fields(redis_client, "step-1")["total"] == "1"
    with pytest.raises(BatchError, match="bid"):
        Batch.create("not a bid")


def test_reopening_a_missing_batch_or_child_of_one_is_a_clear_error(config):
    with pytest.raises(BatchNotFoundError, match="nope"):
        Batch("nope")
    with pytest.raises(BatchError, match="reopens"):
        Batch("x", description="new?")
    with pytest.raises(BatchError, match="bid"):
        BatchStatus(" ")


class NoMethods:
    pass


def test_callback_targets_are_checked_where_they_can_be(config):
    batch = Batch(callback_class=batch_jobs.Recorder)
    batch.on("complete", batch_jobs.Recorder)
    batch.on("success", "tests.core.batch_jobs.Recorder#named")
    batch.on("death", "#named")
    batch.on("success", "elsewhere.callbacks.Notify")  # not importable here: accepted
    bad = [("complete", NoMethods, "no method on_complete"),
           ("success", "tests.core.batch_jobs.Missing", "'Missing' not found"),
           ("success", "tests.core.batch_jobs.Recorder#nope", "no method nope"),
           ("success", "tests.core.batch_jobs.record", "not a class"),
           ("success", "Recorder", "dotted path"),
           ("success", 42, "class or a string"),
           ("finished", batch_jobs.Recorder, "one of complete, success, death")]
    for event, target, message in bad:
        with pytest.raises(CallbackTargetError, match=message):
            batch.on(event, target)
    with pytest.raises(CallbackTargetError, match="callback_class"):
        Batch().on("success", "#named")
    with pytest.raises(BatchError, match="JSON"):
        batch.on("success", batch_jobs.Recorder, {"when": object()})


def test_callbacks_register_once_and_later_ones_are_added_atomically(config, redis_client):
    batch = Batch(on_success=(batch_jobs.Recorder, {"a": 1}))
    batch.on("success", batch_jobs.Recorder, {"a": 1})
    with batch:
        batch_jobs.Work.perform_async()
    batch.on("complete", batch_jobs.Recorder)
    batch.on("complete", batch_jobs.Recorder)
    stored = json.loads(fields(redis_client, batch.bid)["callbacks"])
    assert stored == [["success", "tests.core.batch_jobs.Recorder", {"a": 1}],
                      ["complete", "tests.core.batch_jobs.Recorder", {}]]
    assert Batch(batch.bid).status.callbacks == stored
    redis_client.hset(keys.batch(batch.bid), "complete", "1")
    with pytest.raises(BatchError, match="already fired 'complete'"):
        batch.on("complete", batch_jobs.Recorder, {"late": True})


def test_options_are_fixed_by_the_first_block_except_linger(config, redis_client):
    batch = Batch(expires_in=600)
    batch.description = "set before"
    with batch:
        batch_jobs.Work.perform_async()
    assert 0 < redis_client.ttl(keys.batch(batch.bid)) <= 600
    for name in ("description", "callback_queue", "tags"):
        with pytest.raises(BatchError, match=f"{name} is written"):
            setattr(batch, name, "x" if name != "tags" else ["x"])
    with pytest.raises(BatchError, match="expires_in"):
        batch.expires_in(60)
    batch.linger = 120
    assert fields(redis_client, batch.bid)["linger"] == "120"
    for bad in (0, -5, "soon", True):
        with pytest.raises(BatchError, match="positive number"):
            Batch(linger=bad)
    with pytest.raises(BatchError, match="tags"):
        Batch(tags="one")


def test_each_thread_and_asyncio_task_sees_its_own_block(config, redis_client):
    outside = []
    with Batch() as batch:
        thread = threading.Thread(target=lambda: outside.append(
            batch_jobs.Work.perform_async()))
        thread.start()
        thread.join()

        async def in_a_task():
            return batch_jobs.Work.perform_async()

        inside = asyncio.run(in_a_task())  # a task made inside the block is in it
    by_jid = {job["jid"]: job for job in queued(redis_client)}
    assert "bid" not in by_jid[outside[0]]
    assert by_jid[inside]["bid"] == batch.bid
    assert members(redis_client, batch.bid, "jids") == {inside}


def test_pushes_inside_a_block_never_wait_for_a_commit(redis_url, redis_client):
    deferred = []

    def defer(push, transactional):
        deferred.append(push)
        return True

    set_default_config(Config(redis_url=redis_url, push_deferrer=defer))
    try:
        with Batch() as batch:
            jid = batch_jobs.Work.perform_async()
        batch_jobs.Work.perform_async()  # outside: deferred as before
    finally:
        set_default_config(None)
    assert len(deferred) == 1
    assert [job["jid"] for job in queued(redis_client)] == [jid]
    assert members(redis_client, batch.bid, "jids") == {jid}


def test_in_the_testing_modes_a_block_stamps_its_bid_and_touches_no_redis(config,
                                                                          redis_client):
    with testing("fake"):
        with Batch(on_success=batch_jobs.Recorder) as batch:
            batch_jobs.Work.perform_async()
        [job] = batch_jobs.Work.jobs()
        assert job["bid"] == batch.bid
        assert Batch(batch.bid).bid == batch.bid  # reopening needs no Redis either
        batch_jobs.Work.clear()
    assert redis_client.keys("*") == []


def test_include_remove_jobs_and_invalidate_all(config, redis_client):
    with Batch() as parent:
        kept, dropped = batch_jobs.Work.perform_async(), batch_jobs.Work.perform_async()
        with Batch() as child:
            batch_jobs.Work.perform_async()
    assert parent.include(kept) and not parent.include("unknown")
    assert parent.remove_jobs(dropped, "unknown") == 1
    assert (fields(redis_client, parent.bid)["total"], parent.include(dropped)) == ("1", False)
    assert parent.valid() and child.valid()
    assert parent.invalidate_all() == 2
    assert not child.valid() and parent.invalidated
    assert BatchStatus(child.bid).invalidated


def test_removing_the_last_jobs_leaves_a_no_op_job_to_fire_it(config, redis_client):
    with Batch() as batch:
        jid = batch_jobs.Work.perform_async()
    assert batch.remove_jobs(jid) == 1
    empty = [job for job in queued(redis_client) if job["class"] == "Sidekiq::Batch::Empty"]
    assert [job["bid"] for job in empty] == [batch.bid]


def test_batch_status_reads_the_batch_and_deletes_it(config, redis_client):
    with Batch(description="report", tags=["t1"]) as batch:
        jid = batch_jobs.Work.perform_async()
    status = BatchStatus(batch.bid)
    data = status.data()
    assert {key: data[key] for key in ("bid", "total", "pending", "failures", "complete",
                                       "description", "tags")} == {
        "bid": batch.bid, "total": 1, "pending": 1, "failures": 0, "complete": False,
        "description": "report", "tags": ["t1"]}
    assert json.loads(json.dumps(data)) == data
    assert status.include(jid) and status.failed_jids == [] and status.child_count == 0
    assert status.delete() is True
    assert not BatchStatus(batch.bid).exists
    assert redis_client.zscore(keys.BATCHES, batch.bid) is None
    assert not redis_client.sismember(keys.batch_tag("t1"), batch.bid)
    assert redis_client.keys("b-*") == []


def test_a_job_with_a_bid_pushed_outside_a_block_joins_its_batch(config, redis_client):
    with Batch() as batch:
        batch_jobs.Work.perform_async()
    jid = Client(config).push({"class": "tests.core.batch_jobs.Work", "args": [],
                               "bid": batch.bid})
    assert jid in members(redis_client, batch.bid, "jids")
    assert fields(redis_client, batch.bid)["total"] == "2"
