"""The dashboard API when Redis holds keys of the wrong type (a hand-made `SET queue:w x`,
another tool's data): every error is problem JSON, and one bad key degrades one row."""

import json
import logging
import time

import pytest

from tests.django.dashboard_helpers import Api, ok, problem_of, users_fixture  # noqa: F401
from wurk_django.core import Client as JobClient
from wurk_django.core import Config, keys, set_default_config
from wurk_django.core.payload import dumps
from wurk_django.core.redis import close_connections

pytestmark = pytest.mark.django_db


@pytest.fixture
def viewer(config, users):
    return Api(users["viewer"])


def register(redis_client, identity: str) -> None:
    redis_client.sadd(keys.PROCESSES, identity)
    redis_client.hset(identity, mapping={
        "info": dumps({"hostname": identity.split(":")[0], "pid": 1, "concurrency": 4,
                       "queues": ["default"], "identity": identity}),
        "busy": 1, "beat": repr(time.time()), "quiet": "false", "rss": 1000})


def test_a_queue_key_of_the_wrong_type_degrades_its_row_only(viewer, redis_client):
    JobClient.enqueue_to("default", "app.Job", 1)
    redis_client.sadd(keys.QUEUES, "w")
    redis_client.set(keys.queue("w"), "x")
    listed = ok(viewer.get("queues"))["items"]
    good, bad = listed
    assert (good["name"], good["size"], good["error"]) == ("default", 1, None)
    assert (bad["name"], bad["size"], bad["latency"]) == ("w", None, None)
    assert "queue:w" in bad["error"] and "string" in bad["error"]
    stats = ok(viewer.get("stats"))
    assert stats["enqueued"] == 1 and stats["processed"] == 0
    assert any("queue:w" in problem for problem in stats["problems"])
    body = problem_of(viewer.get("queues/w"), 500, "wrong_type")
    assert "queue:w" in body["detail"]
    problem_of(viewer.get("queues/w/jobs"), 500, "wrong_type")


@pytest.mark.parametrize("key, field", [(keys.RETRY, "retries"), (keys.SCHEDULE, "scheduled"),
                                        (keys.DEAD, "dead")])
def test_a_sorted_set_of_the_wrong_type_is_unknown_in_stats_and_a_problem_on_its_page(
        viewer, redis_client, key, field):
    redis_client.set(key, "x")
    stats = ok(viewer.get("stats"))
    assert stats[field] is None
    assert any(key in problem for problem in stats["problems"])
    assert all(stats[other] == 0 for other in ("retries", "scheduled", "dead") if other != field)
    body = problem_of(viewer.get(f"sets/{field}"), 500, "wrong_type")
    assert f"'{key}'" in body["detail"] and "string" in body["detail"]


def test_counters_and_the_default_queue_of_the_wrong_type(viewer, redis_client):
    redis_client.hset(keys.STAT_PROCESSED, "a", "1")
    redis_client.sadd(keys.queue("default"), "x")
    stats = ok(viewer.get("stats"))
    assert stats["processed"] is None and stats["failed"] == 0
    assert stats["default_latency"] is None
    assert len(stats["problems"]) == 2
    # Health asks Redis for LLEN queue:default: an answer, even WRONGTYPE, means it is up.
    health = ok(viewer.get("health"))
    assert health["status"] == "ok" and "'queue:default'" in health["problems"][0]


def test_a_process_whose_hash_is_a_string_is_left_out_with_a_note(viewer, redis_client):
    register(redis_client, "good:1:aaa")
    redis_client.sadd(keys.PROCESSES, "bad:2:bbb")
    redis_client.set("bad:2:bbb", "x")
    listed = ok(viewer.get("processes"))
    assert [p["identity"] for p in listed["items"]] == ["good:1:aaa"]
    assert listed["busy"] == 1
    [problem] = listed["problems"]
    assert "'bad:2:bbb'" in problem and "string" in problem
    assert ok(viewer.get("stats"))["busy"] == 1
    assert ok(viewer.get("work"))["items"] == []


def test_a_work_hash_of_the_wrong_type_leaves_the_other_processes(viewer, redis_client):
    register(redis_client, "good:1:aaa")
    register(redis_client, "bad:2:bbb")
    redis_client.set(keys.work("bad:2:bbb"), "x")
    redis_client.hset(keys.work("good:1:aaa"), "t1", dumps({
        "queue": "default", "run_at": int(time.time()),
        "payload": json.dumps({"class": "app.Job", "args": [], "jid": "j" * 24})}))
    work = ok(viewer.get("work"))
    assert [w["jid"] for w in work["items"]] == ["j" * 24]
    assert any(keys.work("bad:2:bbb") in problem for problem in work["problems"])


def test_a_loop_whose_hash_is_a_string_is_skipped_with_a_note(viewer, redis_client):
    redis_client.sadd(keys.PERIODIC, "bad")
    redis_client.set(keys.loop("bad"), "x")
    listed = ok(viewer.get("periodic"))
    assert listed["items"] == []
    assert any(keys.loop("bad") in problem for problem in listed["problems"])


def test_the_queues_set_itself_of_the_wrong_type(viewer, redis_client):
    redis_client.set(keys.QUEUES, "x")
    stats = ok(viewer.get("stats"))
    assert stats["enqueued"] is None
    problem_of(viewer.get("queues"), 500, "wrong_type")


def test_an_unexpected_redis_error_is_problem_json_and_logged(viewer, config, redis_client,
                                                              caplog):
    # An ACL that forbids INFO (a real operator mistake) makes api/stats fail in a way
    # no handler expects: the answer is still problem JSON, and the error is logged.
    redis_client.execute_command("ACL", "SETUSER", "limited", "on", ">secret", "~*", "&*",
                                 "+@all", "-info")
    host, port = redis_client.connection_pool.connection_kwargs["host"], \
        redis_client.connection_pool.connection_kwargs["port"]
    set_default_config(Config(redis_url=f"redis://limited:secret@{host}:{port}/0"))
    try:
        with caplog.at_level(logging.ERROR, logger="wurk"):
            body = problem_of(viewer.get("stats"), 500, "server_error")
    finally:
        set_default_config(config)
        close_connections()
        redis_client.execute_command("ACL", "DELUSER", "limited")
    assert "RedisCommandError" in body["detail"]  # redis-py's NoPermissionError, translated
    assert any(record.exc_info for record in caplog.records)
