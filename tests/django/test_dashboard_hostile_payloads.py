"""Hostile payloads in queues and sets never break a dashboard page: an entry that does not
decode (nested 1,000 levels deep, NaN, invalid UTF-8) is listed as unparseable, with its
bytes, and the pages around it answer as usual."""

import json

import pytest

from tests.django.dashboard_helpers import Api, ok, problem_of, users_fixture  # noqa: F401
from wurk_django.core import keys
from wurk_django.core.payload import dumps

pytestmark = pytest.mark.django_db

DEEP = b'{"class":"x","args":' + b"[" * 1000 + b"]" * 1000 + b',"jid":"deep"}'
NAN = b'{"class":"x","args":[NaN],"jid":"nan","enqueued_at":1739522580123}'
BAD_UTF8 = b'{"class":"x","args":["\xff"],"jid":"utf8"}'
HOSTILE = [DEEP, NAN, BAD_UTF8]
GOOD = dumps({"class": "app.Work", "args": [1], "jid": "good", "queue": "default",
              "enqueued_at": 1739522580123})


@pytest.fixture
def root(config, users):
    return Api(users["superuser"])


def test_queue_pages_answer_with_hostile_entries_first_in_line(root, redis_client):
    # The oldest entry is what the latency and the queue list read first.
    redis_client.sadd(keys.QUEUES, "default")
    redis_client.rpush("queue:default", *HOSTILE, GOOD)
    for path in ("stats", "queues", "queues/default"):
        ok(root.get(path))
    page = ok(root.get("queues/default/jobs", count=10))
    assert len(page["items"]) == 4
    assert sum(1 for row in page["items"] if row.get("jid") == "good") == 1


def test_set_pages_answer_with_hostile_members(root, redis_client):
    for key in (keys.DEAD, keys.RETRY, keys.SCHEDULE):
        redis_client.zadd(key, {raw: 1000 + i for i, raw in enumerate([*HOSTILE, GOOD])})
    ok(root.get("stats"))
    for name in ("dead", "retries", "scheduled"):
        page = ok(root.get(f"sets/{name}", count=10))
        assert page["total"] == 4, name
        assert json.dumps(page)  # the answer is JSON throughout


def test_a_deeply_nested_request_body_is_a_problem_not_a_crash(root, redis_client):
    body = "[" * 1000 + "]" * 1000
    response = root.client.post("/admin/wurk/api/sets/dead/bulk", body,
                                content_type="application/json")
    problem_of(response, 400, "invalid_request")
