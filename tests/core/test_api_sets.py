"""The data API's sorted sets: paging, search, and moving entries without losing or doubling."""

import threading
import time
from datetime import UTC, datetime

import pytest

from wurk_django.core import keys
from wurk_django.core.api import DeadSet, JobRecord, RetrySet, ScheduledSet, SortedEntry
from wurk_django.core.payload import dumps, loads


def job(index: int, **fields) -> dict:
    return {"class": "app.tasks.Work", "args": [index, f"order-{index}"], "queue": "default",
            "jid": f"{index:024x}", "created_at": 1739522580123, **fields}


def fill(redis_client, key: str, count: int, **fields) -> list[bytes]:
    """Add `count` jobs scored 1000.0, 1001.0, ... and return their members."""
    members = [dumps(job(index, **fields)) for index in range(count)]
    pipe = redis_client.pipeline(transaction=False)
    for index, member in enumerate(members):
        pipe.zadd(key, {member: 1000.0 + index})
    pipe.execute()
    return members


def queued(redis_client, queue: str = "default") -> list[dict]:
    return [loads(raw) for raw in redis_client.lrange(keys.queue(queue), 0, -1)]


# --- reading -----------------------------------------------------------------------

def test_paging_a_large_set_returns_the_right_page_and_total(config, redis_client):
    fill(redis_client, keys.RETRY, 2000)
    retries = RetrySet(config)
    page = retries.page(3, 50)
    assert [entry.args[0] for entry in page] == list(range(100, 150))
    assert (page.total, page.pages, retries.size) == (2000, 40, 2000)
    assert [entry.score for entry in page][:2] == [1100.0, 1101.0]
    newest = retries.page(1, 50, reverse=True)
    assert [entry.args[0] for entry in newest] == list(range(1999, 1949, -1))
    assert len(retries.page(40, 50)) == 50
    assert len(retries.page(41, 50)) == 0


def test_entry_at_and_key_come_from_the_score(config, redis_client):
    redis_client.zadd(keys.SCHEDULE, {dumps(job(1)): 1739522580.5})
    [entry] = ScheduledSet(config).page()
    assert entry.at == datetime(2025, 2, 14, 8, 43, 0, 500000, tzinfo=UTC)
    assert entry.key == f"1739522580.5-{job(1)['jid']}"


@pytest.mark.parametrize("text, expected", [
    ("app.tasks.Work", list(range(30))),               # by class
    (f"{17:024x}", [17]),                              # by jid
    ("order-2", [2, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29]),  # by argument text
])
def test_search_finds_by_class_jid_or_argument_text(config, redis_client, text, expected):
    fill(redis_client, keys.DEAD, 30)
    result = DeadSet(config).search(text)
    assert [entry.args[0] for entry in result] == expected
    assert result.truncated is False


def test_search_treats_glob_and_quote_characters_literally(config, redis_client):
    redis_client.zadd(keys.RETRY, {dumps(job(1, args=['say "hi" *now*'])): 1.0,
                                   dumps(job(2, args=["say hi now"])): 2.0,
                                   dumps(job(3, args=["[x]?"])): 3.0})
    retries = RetrySet(config)
    assert [e.jid for e in retries.search('"hi" *now*')] == [job(1)["jid"]]
    assert [e.jid for e in retries.search("[x]?")] == [job(3)["jid"]]


def test_search_caps_the_hits_and_says_so(config, redis_client):
    fill(redis_client, keys.RETRY, 2000)
    result = RetrySet(config).search("app.tasks.Work", limit=10)
    assert len(result) == 10 and result.truncated is True
    assert RetrySet(config).search("order-1999").entries[0].args[0] == 1999


def test_scan_with_a_glob(config, redis_client):
    fill(redis_client, keys.SCHEDULE, 12)
    scheduled = ScheduledSet(config)
    assert sorted(e.args[0] for e in scheduled.scan('*"order-1?"*')) == [10, 11]
    # Without a `*` the pattern is wrapped in `*...*`, as Sidekiq does.
    assert sorted(e.args[0] for e in scheduled.scan("order-1?")) == [1, 10, 11]


def test_fetch_by_score_and_jid_find_job_and_delete_by_jid(config, redis_client):
    fill(redis_client, keys.RETRY, 300)
    redis_client.zadd(keys.RETRY, {dumps(job(999)): 1005.0})  # shares a score with job 5
    retries = RetrySet(config)
    assert sorted(e.args[0] for e in retries.fetch(1005.0)) == [5, 999]
    assert [e.args[0] for e in retries.fetch("1005", job(999)["jid"])] == [999]
    assert [e.args[0] for e in retries.fetch((1010, 1012))] == [10, 11, 12]
    assert retries.find_job(job(250)["jid"]).score == 1250.0
    assert retries.find_job("f" * 24) is None
    assert retries.delete_by_jid(1005.0, job(999)["jid"]) is True
    assert retries.delete_by_jid(1005.0, job(999)["jid"]) is False
    assert [e.args[0] for e in retries.fetch(1005.0)] == [5]


def test_iterating_and_deleting_every_entry_skips_none(config, redis_client):
    fill(redis_client, keys.SCHEDULE, 250)
    scheduled = ScheduledSet(config)
    seen = [entry.args[0] for entry in scheduled if entry.delete()]
    assert seen == list(range(250))
    assert redis_client.zcard(keys.SCHEDULE) == 0


# --- moving single entries ---------------------------------------------------------

@pytest.mark.parametrize("set_class", [RetrySet, DeadSet])
def test_retry_now_decrements_retry_count_and_keeps_the_jid(config, redis_client, set_class):
    redis_client.zadd(set_class.name, {dumps(job(1, retry_count=3, queue="low")): 5.0})
    [entry] = set_class(config).page()
    before_ms = time.time_ns() // 1_000_000
    assert entry.retry() == job(1)["jid"]
    [pushed] = queued(redis_client, "low")
    assert pushed["jid"] == job(1)["jid"] and pushed["retry_count"] == 2
    assert pushed["enqueued_at"] >= before_ms and pushed["created_at"] == 1739522580123
    assert redis_client.sismember(keys.QUEUES, "low")
    assert redis_client.zcard(set_class.name) == 0


def test_add_to_queue_keeps_retry_count(config, redis_client):
    redis_client.zadd(keys.SCHEDULE, {dumps(job(1, retry_count=3)): 5.0})
    [entry] = ScheduledSet(config).page()
    assert entry.add_to_queue() == job(1)["jid"]
    assert queued(redis_client)[0]["retry_count"] == 3


def test_add_to_queue_twice_pushes_once(config, redis_client):
    redis_client.zadd(keys.SCHEDULE, {dumps(job(1)): 5.0})
    [first] = ScheduledSet(config).page()
    [second] = ScheduledSet(config).page()  # a second operator's stale screen
    assert first.add_to_queue() == job(1)["jid"]
    assert second.add_to_queue() is None
    assert first.add_to_queue() is None
    assert len(queued(redis_client)) == 1


def test_concurrent_retries_of_one_entry_push_it_once(config, redis_client):
    redis_client.zadd(keys.RETRY, {dumps(job(1, retry_count=0)): 5.0})
    entries = [RetrySet(config).page().entries[0] for _ in range(16)]
    barrier = threading.Barrier(len(entries))
    results = []

    def click(entry):
        barrier.wait()
        results.append(entry.retry())

    threads = [threading.Thread(target=click, args=(entry,)) for entry in entries]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results.count(job(1)["jid"]) == 1
    assert len(queued(redis_client)) == 1


class StampMiddleware:
    def call(self, job_class, job, queue, redis, next_):
        job["stamped"] = True
        return next_()


class RefuseMiddleware:
    def call(self, job_class, job, queue, redis, next_):
        raise RuntimeError("refused")


def test_add_to_queue_runs_client_middleware(config, redis_client):
    config.client_middleware.add(StampMiddleware)
    redis_client.zadd(keys.SCHEDULE, {dumps(job(1)): 5.0})
    ScheduledSet(config).page().entries[0].add_to_queue()
    assert queued(redis_client)[0]["stamped"] is True


def test_add_to_queue_is_never_deferred_to_a_transaction_commit(config, redis_client):
    held = []
    deferring = config.replace(push_deferrer=lambda push, transactional: held.append(push) or True)
    redis_client.zadd(keys.SCHEDULE, {dumps(job(1)): 5.0})
    ScheduledSet(deferring).page().entries[0].add_to_queue()
    assert held == []
    [pushed] = queued(redis_client)
    assert "transactional" not in pushed


def test_a_failed_push_puts_the_entry_back(config, redis_client):
    config.client_middleware.add(RefuseMiddleware)
    member = dumps(job(1, retry_count=4))
    redis_client.zadd(keys.RETRY, {member: 5.0})
    entry = RetrySet(config).page().entries[0]
    with pytest.raises(RuntimeError, match="refused"):
        entry.retry()
    assert redis_client.zrange(keys.RETRY, 0, -1, withscores=True) == [(member, 5.0)]
    assert queued(redis_client) == []


def test_an_unparseable_entry_cannot_be_pushed_and_stays(config, redis_client):
    redis_client.zadd(keys.RETRY, {b"\xffgarbage": 5.0})
    [entry] = RetrySet(config).page()
    with pytest.raises(ValueError, match="not a valid job"):
        entry.retry()
    assert redis_client.zcard(keys.RETRY) == 1


def test_delete_an_unparseable_dead_entry_by_its_raw_bytes(config, redis_client):
    garbage = b"\xff\xfe{half a job"
    redis_client.zadd(keys.DEAD, {garbage: 5.0, dumps(job(1)): 6.0})
    dead = DeadSet(config)
    [entry] = [e for e in dead.page() if e.item is None]
    assert entry.raw == garbage and entry.klass is None
    assert entry.delete() is True
    assert redis_client.zrange(keys.DEAD, 0, -1) == [dumps(job(1))]
    assert dead.delete_by_value(garbage) is False


def test_reschedule_moves_the_score_but_never_resurrects(config, redis_client):
    redis_client.zadd(keys.SCHEDULE, {dumps(job(1)): 5.0})
    [entry] = ScheduledSet(config).page()
    entry.reschedule(datetime(2030, 1, 1, tzinfo=UTC))
    assert redis_client.zscore(keys.SCHEDULE, entry.raw) == 1893456000.0
    entry.delete()
    entry.reschedule(1893456000.0)
    assert redis_client.zcard(keys.SCHEDULE) == 0


def test_kill_moves_to_dead_and_notifies_death_handlers_when_asked(config, redis_client):
    deaths = []
    config.death_handlers.append(lambda job_hash, exc: deaths.append((job_hash["jid"], exc)))
    fill(redis_client, keys.RETRY, 2)
    quiet, loud = RetrySet(config).page()
    assert quiet.kill() is True
    assert deaths == []
    assert loud.kill(notify_failure=True) is True
    assert loud.kill() is False
    assert redis_client.zcard(keys.RETRY) == 0
    assert set(redis_client.zrange(keys.DEAD, 0, -1)) == {quiet.raw, loud.raw}
    [(jid, exc)] = deaths
    assert jid == loud.jid and "killed" in str(exc)


def test_kill_trims_dead_with_the_exact_rule(config, redis_client):
    """ZREMRANGEBYRANK dead 0 -max keeps max - 1 members once full."""
    limited = config.replace(dead_max_jobs=5, dead_timeout_in_seconds=3600)
    now = time.time()
    redis_client.zadd(keys.DEAD, {dumps(job(100)): now - 7200})  # past the age limit
    old = [dumps(job(i)) for i in range(5)]
    redis_client.zadd(keys.DEAD, {member: now - 100 + i for i, member in enumerate(old)})
    redis_client.zadd(keys.RETRY, {dumps(job(9)): 1.0})
    [entry] = RetrySet(limited).page()
    entry.kill()
    assert redis_client.zrange(keys.DEAD, 0, -1) == [*old[2:], entry.raw]


def test_dead_set_kill_of_a_raw_payload(config, redis_client):
    DeadSet(config).kill(b"\xffraw")
    assert redis_client.zrange(keys.DEAD, 0, -1) == [b"\xffraw"]
    assert abs(redis_client.zscore(keys.DEAD, b"\xffraw") - time.time()) < 5


def test_schedule_stores_the_job_without_at_and_enqueued_at(config, redis_client):
    entry = ScheduledSet(config).schedule(1893456000.0, {**job(1), "at": 1.0,
                                                         "enqueued_at": 2})
    [(member, score)] = redis_client.zrange(keys.SCHEDULE, 0, -1, withscores=True)
    assert member == entry.raw and score == 1893456000.0
    assert loads(member) == job(1)


# --- moving everything -------------------------------------------------------------

def test_retry_all_moves_every_entry_in_chunks(config, redis_client):
    fill(redis_client, keys.RETRY, 1200, retry_count=5)
    redis_client.zadd(keys.RETRY, {b"not json": 0.5})
    assert RetrySet(config).retry_all() == 1200
    pushed = queued(redis_client)
    assert len(pushed) == 1200 and {p["retry_count"] for p in pushed} == {4}
    assert len({p["jid"] for p in pushed}) == 1200
    assert redis_client.zrange(keys.RETRY, 0, -1) == [b"not json"]


def test_all_actions_honour_a_limit_lowest_score_first(config, redis_client):
    fill(redis_client, keys.SCHEDULE, 30)
    scheduled = ScheduledSet(config)
    assert scheduled.add_all_to_queue(limit=10) == 10
    assert sorted(p["args"][0] for p in queued(redis_client)) == list(range(10))
    assert scheduled.delete_all(limit=5) == 5
    assert [e.args[0] for e in scheduled.page(1, 1)] == [15]
    assert scheduled.size == 15


def test_kill_all_moves_every_entry_to_dead(config, redis_client):
    members = fill(redis_client, keys.RETRY, 700)
    assert RetrySet(config).kill_all() == 700
    assert redis_client.zcard(keys.RETRY) == 0
    assert set(redis_client.zrange(keys.DEAD, 0, -1)) == set(members)


def test_delete_all_and_clear(config, redis_client):
    fill(redis_client, keys.DEAD, 600)
    assert DeadSet(config).delete_all() == 600
    fill(redis_client, keys.DEAD, 10)
    DeadSet(config).clear()
    assert redis_client.exists(keys.DEAD) == 0


def test_entries_are_job_records(config, redis_client):
    fill(redis_client, keys.RETRY, 1)
    [entry] = RetrySet(config).page()
    assert isinstance(entry, SortedEntry) and isinstance(entry, JobRecord)
    assert entry.klass == "app.tasks.Work" and entry.parent.name == keys.RETRY
