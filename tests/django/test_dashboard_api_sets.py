"""The dashboard API's retries, scheduled and dead sets: paging, search, filters, detail,
row, bulk and "all" actions against real sorted sets."""

import json

import pytest

from tests.django.dashboard_helpers import Api, ok, problem_of, users_fixture  # noqa: F401
from wurk_django.core import keys
from wurk_django.core.payload import dumps, encode_backtrace, loads

pytestmark = pytest.mark.django_db


def job(index: int, **fields) -> dict:
    return {"class": "app.tasks.Work", "args": [index, f"order-{index}"], "queue": "default",
            "jid": f"{index:024x}", "created_at": 1739522580123, "retry_count": 2,
            "error_class": "ValueError", "error_message": f"bad {index}", **fields}


def fill(redis_client, key: str, count: int, start: int = 0, **fields) -> None:
    pipe = redis_client.pipeline(transaction=False)
    for index in range(start, start + count):
        pipe.zadd(key, {dumps(job(index, **fields)): 1000.0 + index})
    pipe.execute()


def numbers(page: dict) -> list[int]:
    return [json.loads(row["args_preview"])[0] for row in page["items"]]


@pytest.fixture
def root(config, users):
    return Api(users["superuser"])


def test_paging_shape_and_default_order_per_set(root, redis_client):
    fill(redis_client, keys.RETRY, 60)
    fill(redis_client, keys.DEAD, 60)
    retries = ok(root.get("sets/retries", page=2, count=25))
    assert {k: retries[k] for k in ("page", "count", "total", "pages", "sort", "truncated")} == {
        "page": 2, "count": 25, "total": 60, "pages": 3, "sort": "asc", "truncated": False}
    assert numbers(retries) == list(range(25, 50))  # soonest first
    dead = ok(root.get("sets/dead", count=5))
    assert dead["sort"] == "desc" and numbers(dead) == [59, 58, 57, 56, 55]  # newest first
    assert numbers(ok(root.get("sets/dead", count=5, sort="asc"))) == [0, 1, 2, 3, 4]
    clamped = ok(root.get("sets/retries", count=9999, page=0))
    assert (clamped["count"], clamped["page"], len(clamped["items"])) == (500, 1, 60)
    assert ok(root.get("sets/retries", count="x"))["count"] == 25
    assert ok(root.get("sets/scheduled"))["items"] == []


def test_row_shape(root, redis_client):
    fill(redis_client, keys.RETRY, 1, failed_at=1739522590.5, bid="b1", tags=["vip"])
    [row] = ok(root.get("sets/retries"))["items"]
    assert row["key"] == f"1000.0-{0:024x}" and row["score"] == 1000.0
    assert (row["class"], row["display_class"], row["queue"]) == (
        "app.tasks.Work", "app.tasks.Work", "default")
    assert (row["created_at_ms"], row["failed_at_ms"], row["enqueued_at_ms"]) == (
        1739522580123, 1739522590500, None)
    assert (row["retry_count"], row["error_class"], row["error_message"]) == (
        2, "ValueError", "bad 0")
    assert (row["tags"], row["bid"], row["encrypted"]) == (["vip"], "b1", False)
    assert row["args_preview"] == '[0, "order-0"]' and row["args_truncated"] is False


def test_search_by_class_jid_and_argument_text(root, redis_client):
    fill(redis_client, keys.RETRY, 30)
    fill(redis_client, keys.RETRY, 2, start=30, **{"class": "app.Other"})
    assert ok(root.get("sets/retries", q="app.Other"))["total"] == 2
    assert numbers(ok(root.get("sets/retries", q=f"{17:024x}"))) == [17]
    found = ok(root.get("sets/retries", q="order-2", count=5))
    assert (found["total"], found["pages"]) == (11, 3)
    assert numbers(found) == [2, 20, 21, 22, 23]
    assert numbers(ok(root.get("sets/retries", q="order-2", sort="desc", count=2))) == [29, 28]
    assert ok(root.get("sets/retries", q="*"))["total"] == 0  # globs are escaped
    assert ok(root.get("sets/retries", q='"'))["total"] == 0


def test_field_filters(root, redis_client):
    fill(redis_client, keys.DEAD, 5)
    fill(redis_client, keys.DEAD, 3, start=5, queue="low", error_class="KeyError")
    fill(redis_client, keys.DEAD, 2, start=8, **{"class": "Sub", "wrapped": "app.Wrapped"})
    assert ok(root.get("sets/dead", queue="low"))["total"] == 3
    assert ok(root.get("sets/dead", error_class="KeyError", queue="low"))["total"] == 3
    assert ok(root.get("sets/dead", error_class="KeyError", queue="default"))["total"] == 0
    assert ok(root.get("sets/dead", **{"class": "app.Wrapped"}))["total"] == 2
    assert ok(root.get("sets/dead", **{"class": "app.tasks.Work", "q": "order-6"}))["total"] == 1
    assert ok(root.get("sets/dead", **{"class": "app.tasks"}))["total"] == 0  # exact field


def test_detail(root, redis_client):
    fill(redis_client, keys.RETRY, 1, error_backtrace=encode_backtrace(["a.py:1", "b.py:2"]),
         custom={"x": 1}, encrypt=True)
    [row] = ok(root.get("sets/retries"))["items"]
    detail = ok(root.get(f"sets/retries/{row['key']}"))
    assert detail["args"] == [0, "[encrypted data]"] and detail["encrypted"] is True
    # The raw payload view shows the placeholder too, never the stored argument.
    assert loads(detail["raw"])["args"] == [0, "[encrypted data]"]
    assert "order-0" not in detail["raw"]
    assert detail["backtrace"] == ["a.py:1", "b.py:2"] and not detail["backtrace_unreadable"]
    assert detail["extra"] == {"custom": '{"x": 1}'} and detail["custom_rows"] == []
    problem_of(root.get("sets/retries/1000.0-nope"), 404, "not_found")
    problem_of(root.get("sets/retries/garbage"), 404, "not_found")


def test_an_unreadable_backtrace_and_an_unparseable_member(root, redis_client):
    redis_client.zadd(keys.DEAD, {dumps(job(1, error_backtrace="%%%")): 5.0, b"not json": 6.0})
    rows = ok(root.get("sets/dead", sort="asc"))["items"]
    assert ok(root.get(f"sets/dead/{rows[0]['key']}"))["backtrace_unreadable"] is True
    broken = ok(root.get(f"sets/dead/{rows[1]['key']}"))
    assert broken["parsed"] is False and broken["args"] is None and broken["raw"] == "not json"
    problem_of(root.post(f"sets/dead/{rows[1]['key']}/retry"), 409, "conflict")
    assert ok(root.delete(f"sets/dead/{rows[1]['key']}"))["done"] == 1


def test_row_actions(root, redis_client):
    fill(redis_client, keys.RETRY, 3)
    fill(redis_client, keys.SCHEDULE, 1, start=10)
    keys_ = [row["key"] for row in ok(root.get("sets/retries"))["items"]]
    assert ok(root.post(f"sets/retries/{keys_[0]}/retry")) == {
        "requested": 1, "done": 1, "missing": 0, "remaining": 0}
    [queued] = [loads(raw) for raw in redis_client.lrange(keys.queue("default"), 0, -1)]
    assert queued["jid"] == f"{0:024x}" and queued["retry_count"] == 1  # a free retry
    assert ok(root.post(f"sets/retries/{keys_[0]}/retry"))["missing"] == 1  # gone already
    ok(root.post(f"sets/retries/{keys_[1]}/kill"))
    assert redis_client.zcard(keys.DEAD) == 1
    ok(root.delete(f"sets/retries/{keys_[2]}"))
    assert redis_client.zcard(keys.RETRY) == 0
    [scheduled] = ok(root.get("sets/scheduled"))["items"]
    assert ok(root.post(f"sets/scheduled/{scheduled['key']}/enqueue"))["done"] == 1
    assert redis_client.llen(keys.queue("default")) == 2
    problem_of(root.post(f"sets/dead/{keys_[1]}/kill"), 404, "not_found")


def test_bulk(root, redis_client):
    fill(redis_client, keys.DEAD, 5)
    rows = ok(root.get("sets/dead", sort="asc"))["items"]
    chosen = [row["key"] for row in rows[:3]] + ["1.0-gone"]
    assert ok(root.post("sets/dead/bulk", {"action": "retry", "keys": chosen})) == {
        "requested": 4, "done": 3, "missing": 1, "remaining": 0, "skipped": 0}
    assert redis_client.llen(keys.queue("default")) == 3 and redis_client.zcard(keys.DEAD) == 2
    problem_of(root.post("sets/dead/bulk", {"action": "kill", "keys": chosen}), 400,
               "invalid_request")
    problem_of(root.post("sets/dead/bulk", {"action": "delete"}), 400, "invalid_request")
    problem_of(root.post("sets/dead/bulk", {"action": ["retry"], "keys": []}), 400,
               "invalid_request")


def test_all_actions_need_a_count_within_ten_percent(root, redis_client):
    fill(redis_client, keys.RETRY, 100)
    for stale in (89, 111, 10, 1000):
        body = problem_of(root.post("sets/retries/all/retry", {"confirm_total": stale}), 409,
                          "conflict")
        assert body["total"] == 100
    problem_of(root.post("sets/retries/all/retry", {}), 400, "invalid_request")
    problem_of(root.post("sets/retries/all/retry", {"confirm_total": "100"}), 400,
               "invalid_request")
    assert redis_client.zcard(keys.RETRY) == 100
    assert ok(root.post("sets/retries/all/kill", {"confirm_total": 91})) == {
        "requested": 100, "done": 100, "missing": 0, "remaining": 0}
    assert redis_client.zcard(keys.DEAD) == 100
    assert ok(root.post("sets/dead/all/retry", {"confirm_total": 110}))["done"] == 100
    assert redis_client.llen(keys.queue("default")) == 100


def test_delete_all_and_enqueue_all(root, redis_client):
    fill(redis_client, keys.SCHEDULE, 700)
    assert ok(root.post("sets/scheduled/all/add_to_queue", {"confirm_total": 700}))["done"] == 700
    assert redis_client.llen(keys.queue("default")) == 700 and not redis_client.exists(
        keys.SCHEDULE)
    fill(redis_client, keys.DEAD, 20)
    assert ok(root.post("sets/dead/all/delete", {"confirm_total": 20}))["done"] == 20
    assert not redis_client.exists(keys.DEAD)
    assert ok(root.post("sets/dead/all/delete", {"confirm_total": 0}))["requested"] == 0
    problem_of(root.post("sets/scheduled/all/kill", {"confirm_total": 0}), 404, "not_found")
