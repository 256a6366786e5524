"""The dashboard's JSON API: auth matrix, check order, CSRF, read-only mode, and each
endpoint against real data in the suite's Redis (sets, metrics, periodic: next file)."""

import json
import time
from datetime import UTC, datetime

import pytest
from django.test import Client

from tests.django.dashboard_helpers import (
    Api,
    grant,
    ok,
    problem_of,
    redis_snapshot,
    users_fixture,  # noqa: F401  (the users fixture)
)
from tests.support.redis_server import free_port
from tests.support.workers import wait_until
from wurk_django.core import Client as JobClient
from wurk_django.core import Config, deploy, keys, set_default_config
from wurk_django.core.payload import dumps
from wurk_django.core.redis import close_connections

pytestmark = pytest.mark.django_db

GETS = ["meta", "health", "stats", "stats/history", "processes", "work", "queues",
        "queues/default", "queues/default/jobs", "sets/retries", "sets/scheduled", "sets/dead",
        "metrics", "metrics/app.Job", "periodic", "limiters", "batches", "batches/dead"]
# Features with routes but nothing that creates their data yet (off in `meta`).
UNAVAILABLE = [("GET", "profiles"), ("GET", "profiles/abc/data")]
# Mutations that succeed for a superuser on the fixture data (`seeded`).
MUTATIONS = [
    ("POST", "processes/quiet", None), ("POST", "processes/stop", None),
    ("POST", "queues/default/pause", None), ("POST", "queues/default/resume", None),
    ("POST", "queues/default/jobs/delete", {"keys": []}), ("DELETE", "queues/mail", None),
    ("POST", "sets/retries/bulk", {"action": "delete", "keys": []}),
    ("POST", "sets/dead/all/delete", {"confirm_total": 1}),
    ("POST", "sets/retries/1.5-nojid/retry", None), ("DELETE", "sets/retries/1.5-nojid", None),
]


@pytest.fixture
def seeded(config, redis_client):
    """A little of everything, so "no Redis writes" is checked against real data."""
    JobClient.enqueue_to("default", "app.Job", 1)
    JobClient.enqueue_to("mail", "app.Mail", "a@example.com")
    redis_client.zadd(keys.RETRY, {dumps({"class": "app.Job", "args": [2], "jid": "r" * 24,
                                          "queue": "default", "retry_count": 1}): 100.0})
    redis_client.zadd(keys.DEAD, {dumps({"class": "app.Job", "args": [3], "jid": "d" * 24,
                                         "queue": "default"}): 200.0})
    return redis_client


# --- who may do what --------------------------------------------------------------

@pytest.mark.parametrize("path", GETS)
def test_every_get_endpoint_answers_by_role(seeded, users, path):
    problem_of(Api().get(path), 401, "unauthenticated")
    problem_of(Api(users["outsider"]).get(path), 403, "forbidden")
    for role in ("viewer", "changer", "superuser"):
        response = Api(users[role]).get(path)
        ok(response)
        assert response["Cache-Control"] == "no-store"


@pytest.mark.parametrize("method, path, body", MUTATIONS)
def test_every_mutation_answers_by_role(seeded, users, method, path, body):
    problem_of(Api().call(method, path, body), 401, "unauthenticated")
    problem_of(Api(users["outsider"]).call(method, path, body), 403, "forbidden")
    problem_of(Api(users["viewer"]).call(method, path, body), 403, "forbidden")
    assert "requested" in ok(Api(users["changer"]).call(method, path, body))


@pytest.mark.parametrize("method, path, body", MUTATIONS + [
    ("POST", "processes/host:1:abc/quiet", None), ("POST", "periodic/abc/run", None),
    ("POST", "limiters/x/reset", None), ("POST", "sets/scheduled/all/delete",
                                         {"confirm_total": 0})])
def test_read_only_mode_refuses_every_mutation_and_writes_nothing(seeded, users, settings,
                                                                  method, path, body):
    settings.WURK = {**settings.WURK, "DASHBOARD": {"READ_ONLY": True}}
    before = redis_snapshot(seeded)
    for role in ("superuser", "changer", "viewer", "outsider"):
        problem_of(Api(users[role]).call(method, path, body), 403, "read_only")
    assert redis_snapshot(seeded) == before
    meta = ok(Api(users["superuser"]).get("meta"))
    assert meta["read_only"] is True and meta["can_change"] is True
    ok(Api(users["superuser"]).get("queues"))  # reads are unchanged


def test_read_only_from_the_environment(seeded, users, monkeypatch):
    monkeypatch.setenv("WURK_DASHBOARD_READ_ONLY", "1")
    problem_of(Api(users["superuser"]).post("queues/default/pause"), 403, "read_only")
    assert ok(Api(users["superuser"]).get("meta"))["read_only"] is True
    assert not seeded.sismember(keys.PAUSED, "default")


def test_require_view_permission(seeded, users, settings):
    settings.WURK = {**settings.WURK, "DASHBOARD": {"REQUIRE_VIEW_PERMISSION": True}}
    problem_of(Api(users["viewer"]).get("stats"), 403, "forbidden")
    problem_of(Api(users["changer"]).get("stats"), 403, "forbidden")
    ok(Api(grant(users["viewer"], "view_dashboard")).get("stats"))
    ok(Api(users["superuser"]).get("stats"))


# --- the order of the checks --------------------------------------------------------

def test_check_order(seeded, users, settings):
    form = {"content_type": "application/x-www-form-urlencoded"}
    # 401 before 404 and 405.
    problem_of(Api().get("no/such/thing"), 401, "unauthenticated")
    problem_of(Api().client.put("/admin/wurk/api/stats"), 401, "unauthenticated")
    # 404/405 before any 403.
    problem_of(Api(users["outsider"]).get("no/such/thing"), 404, "not_found")
    response = Api(users["outsider"]).client.put("/admin/wurk/api/stats")
    assert problem_of(response, 405, "method_not_allowed") and response["Allow"] == "GET, HEAD"
    response = Api(users["superuser"]).get("queues/default/pause")
    assert problem_of(response, 405, "method_not_allowed") and response["Allow"] == "POST"
    problem_of(Api(users["superuser"]).post("sets/scheduled/1.5-x/kill"), 404, "not_found")
    problem_of(Api(users["superuser"]).get("queues/bad%20name/jobs"), 404, "not_found")
    # forbidden before 415; 415 before csrf_failed.
    viewer = Api(users["viewer"], csrf=True).client
    problem_of(viewer.post("/admin/wurk/api/queues/default/pause", "a=1", **form), 403,
               "forbidden")
    root = Api(users["superuser"], csrf=True)
    problem_of(root.client.post("/admin/wurk/api/queues/default/pause", "a=1", **form), 415,
               "unsupported_media_type")
    problem_of(root.client.post("/admin/wurk/api/queues/default/pause"), 415,
               "unsupported_media_type")  # multipart: the test client's default
    problem_of(root.post("queues/default/pause"), 403, "csrf_failed")
    assert not seeded.sismember(keys.PAUSED, "default")
    # read_only before forbidden.
    settings.WURK = {**settings.WURK, "DASHBOARD": {"READ_ONLY": True}}
    problem_of(Api(users["viewer"]).post("queues/default/pause"), 403, "read_only")


def test_csrf_token_from_meta_passes_the_check(seeded, users):
    api = Api(users["superuser"], csrf=True)
    meta = ok(api.get("meta"))
    assert api.client.cookies["csrftoken"].value
    assert meta["csrf_header"] == "X-CSRFTOKEN" and meta["csrf_cookie"] == "csrftoken"
    ok(api.post("queues/default/pause", **{"X-CSRFToken": meta["csrf_token"]}))
    assert seeded.sismember(keys.PAUSED, "default")
    problem_of(api.post("queues/default/resume", **{"X-CSRFToken": "x" * 32}), 403,
               "csrf_failed")


@pytest.mark.parametrize("site, allowed", [("same-origin", True), ("none", True),
                                           ("cross-site", False), ("same-site", False)])
def test_sec_fetch_site(seeded, users, site, allowed):
    response = Api(users["superuser"]).post("queues/default/pause", **{"Sec-Fetch-Site": site})
    if allowed:
        ok(response)
    else:
        problem_of(response, 403, "csrf_failed")
        assert not seeded.sismember(keys.PAUSED, "default")


@pytest.mark.parametrize("raw", ["{not json", "[1, 2]", '"text"'])
def test_a_body_that_is_not_a_json_object_is_invalid(seeded, users, raw):
    client = Api(users["superuser"]).client
    response = client.post("/admin/wurk/api/sets/retries/bulk", raw,
                           content_type="application/json")
    problem_of(response, 400, "invalid_request")


# --- meta, health, stats, history -------------------------------------------------

def test_meta_describes_the_user_and_the_api(seeded, users):
    meta = ok(Api(users["changer"]).get("meta"))
    assert meta["user"]["username"] == "changer"
    assert (meta["read_only"], meta["can_change"], meta["poll_default"]) == (False, True, 5)
    assert meta["sets"]["scheduled"]["row_actions"] == ["add_to_queue", "delete"]
    assert meta["sets"]["dead"]["all_actions"] == ["delete", "retry"]
    assert meta["admin_url"] == "/admin/" and abs(meta["server_time_ms"] / 1000 - time.time()) < 60
    assert ok(Api(users["viewer"]).get("meta"))["can_change"] is False


def test_health_is_503_when_redis_is_down(users, config):
    ok(Api(users["viewer"]).get("health"))
    set_default_config(Config(redis_url=f"redis://127.0.0.1:{free_port()}/0",
                              network_timeout_s=0.5))
    try:
        problem_of(Api(users["viewer"]).get("health"), 503, "redis_unavailable")
        problem_of(Api(users["viewer"]).get("stats"), 503, "redis_unavailable")
    finally:
        set_default_config(config)
        close_connections()


def test_stats_count_everything(seeded, users):
    seeded.set(keys.STAT_PROCESSED, 42)
    stats = ok(Api(users["viewer"]).get("stats"))
    assert (stats["processed"], stats["enqueued"], stats["retries"], stats["dead"]) == (
        42, 2, 1, 1)
    assert stats["scheduled"] == 0 and stats["busy"] == 0 and stats["processes"] == 0
    assert set(stats["redis"]) >= {"redis_version", "uptime_in_days", "connected_clients",
                                   "used_memory_human", "used_memory_peak_human"}


def test_history_per_day_with_deploy_marks(config, redis_client, users):
    today = datetime.now(UTC)
    day = today.strftime("%Y-%m-%d")
    redis_client.set(keys.stat("processed", day), 9)
    redis_client.set(keys.stat("failed", day), 2)
    stamp = deploy.mark("v1.2 <b>", at=today, config=config)
    history = ok(Api(users["viewer"]).get("stats/history", days=7))
    assert day in list(history["processed"])[-2:] and len(history["processed"]) == 7
    assert history["processed"][day] == 9 and history["failed"][day] == 2
    assert history["marks"] == [{"at": stamp, "label": "v1.2 <b>",
                                 "at_ms": int(today.replace(second=0, microsecond=0)
                                              .timestamp() * 1000)}]
    for days in ("0", "181", "x", "-3"):
        problem_of(Api(users["viewer"]).get("stats/history", days=days), 400,
                   "invalid_request")


# --- processes and work -----------------------------------------------------------

def register(redis_client, identity: str, **info):
    redis_client.sadd(keys.PROCESSES, identity)
    redis_client.hset(identity, mapping={
        "info": dumps({"hostname": identity.split(":")[0], "pid": 1, "concurrency": 4,
                       "queues": ["default"], "identity": identity, **info}),
        "busy": 1, "beat": repr(time.time()), "quiet": "false", "rss": 1000})


def test_embedded_processes_are_skipped_and_refused(config, redis_client, users):
    register(redis_client, "web:1:aaa", embedded=True)
    register(redis_client, "worker:2:bbb")
    root = Api(users["superuser"])
    listed = ok(root.get("processes"))
    assert [p["identity"] for p in listed["items"]] == ["web:1:aaa", "worker:2:bbb"]
    assert (listed["threads"], listed["busy"], listed["utilization"]) == (8, 2, 25.0)
    assert ok(root.post("processes/quiet"))["done"] == 1
    assert redis_client.lrange("worker:2:bbb-signals", 0, -1) == [b"TSTP"]
    assert not redis_client.exists("web:1:aaa-signals")
    problem_of(root.post("processes/web:1:aaa/stop"), 409, "conflict")
    problem_of(root.post("processes/gone:3:ccc/stop"), 404, "not_found")


@pytest.mark.slow
def test_a_real_worker_busy_quiet_and_stopped(config, redis_client, users, start_worker):
    jid = JobClient.enqueue_to("default", "tests.core.jobs.slow", 30, "busy")
    worker = start_worker("-c", "1", "-t", "1", "--heartbeat-interval", "0.5",
                          "--poll-interval", "0.5")
    root = Api(users["superuser"])
    work = wait_until(lambda: ok(root.get("work"))["items"], 15, message="a running job")
    assert work[0]["jid"] == jid and work[0]["queue"] == "default"
    assert work[0]["args_preview"] == '[30, "busy"]' and work[0]["run_at_ms"]
    assert ok(root.get("work", queue="low"))["items"] == []
    [process] = ok(root.get("processes"))["items"]
    assert process["pid"] == worker.pid and process["busy"] == 1 and not process["stale"]
    assert ok(root.post(f"processes/{process['identity']}/quiet"))["done"] == 1
    wait_until(lambda: ok(root.get("processes"))["items"][0]["quiet"], 10,
               message="the process to report quiet")
    assert ok(root.post(f"processes/{process['identity']}/stop"))["done"] == 1
    assert worker.wait(30) == 0


# --- queues -----------------------------------------------------------------------

def test_queue_list_pause_resume_and_clear(config, redis_client, users):
    for n in range(3):
        JobClient.enqueue_to("mail", "app.Mail", n)
    JobClient.enqueue_to("default", "app.Job")
    root = Api(users["superuser"])
    listed = ok(root.get("queues"))["items"]
    assert [(q["name"], q["size"], q["paused"]) for q in listed] == [
        ("default", 1, False), ("mail", 3, False)]
    assert 0 <= listed[1]["latency"] < 60
    ok(root.post("queues/mail/pause"))
    assert redis_client.smembers(keys.PAUSED) == {b"mail"}
    assert ok(root.get("queues/mail"))["paused"] is True
    ok(root.post("queues/mail/resume"))
    assert redis_client.smembers(keys.PAUSED) == set()
    assert ok(root.delete("queues/mail")) == {"requested": 3, "done": 3, "missing": 0,
                                               "remaining": 0}
    assert not redis_client.exists(keys.queue("mail"))
    assert [q["name"] for q in ok(root.get("queues"))["items"]] == ["default"]


def test_queue_jobs_paging_search_and_delete(config, redis_client, users):
    for n in range(30):
        JobClient.enqueue_to("default", "app.Job", n, f"order-{n}")
    root = Api(users["superuser"])
    first = ok(root.get("queues/default/jobs", count=10))
    assert (first["total"], first["pages"], first["page"], first["sort"]) == (30, 3, 1, "desc")
    assert [json.loads(row["args_preview"])[0] for row in first["items"]] == list(
        range(29, 19, -1))  # newest first
    oldest = ok(root.get("queues/default/jobs", count=10, page=3, direction="asc"))
    assert [json.loads(row["args_preview"])[0] for row in oldest["items"]] == list(
        range(20, 30))
    past = ok(root.get("queues/default/jobs", count=10, page=99))
    assert past["page"] == 3 and len(past["items"]) == 10  # clamped to the last page
    found = ok(root.get("queues/default/jobs", q="order-2"))
    assert sorted(json.loads(r["args_preview"])[0] for r in found["items"]) == [2] + list(
        range(20, 30))
    raws = [row["raw"] for row in found["items"][:3]]
    assert ok(root.post("queues/default/jobs/delete", {"keys": raws + raws[:1]})) == {
        "requested": 4, "done": 3, "missing": 1, "remaining": 0}
    assert redis_client.llen(keys.queue("default")) == 27
    problem_of(root.post("queues/default/jobs/delete", {"keys": "x"}), 400, "invalid_request")


def test_raw_keys_are_exact_bytes_even_for_big_integers_and_odd_text(config, redis_client,
                                                                     users):
    raw = b'{"class":"Odd","args":[12345678901234567890,"<script>x</script>"],"jid":"j1",' \
          b'"queue":"default","enqueued_at":1739522580123}'
    redis_client.lpush(keys.queue("default"), raw)
    root = Api(users["superuser"])
    [row] = ok(root.get("queues/default/jobs"))["items"]
    assert row["raw"] == raw.decode() and row["key"] == row["raw"]
    assert row["args_preview"] == '[12345678901234567890, "<script>x</script>"]'
    assert row["enqueued_at_ms"] == 1739522580123
    assert ok(root.post("queues/default/jobs/delete", {"keys": [row["raw"]]}))["done"] == 1
    assert redis_client.llen(keys.queue("default")) == 0


def test_long_args_are_cut_at_2000_characters(config, users):
    JobClient.enqueue_to("default", "app.Job", "y" * 5000)
    [row] = ok(Api(users["viewer"]).get("queues/default/jobs"))["items"]
    assert len(row["args_preview"]) == 2000 and row["args_truncated"] is True


@pytest.mark.parametrize("method, path", UNAVAILABLE)
def test_features_nothing_creates_yet_say_so_and_meta_lists_them_as_off(config, users,
                                                                        method, path):
    body = problem_of(Api(users["superuser"]).call(method, path, None), 501, "not_available")
    assert body["feature"] in path and "not available" in body["detail"]
    problem_of(Api(users["outsider"]).call(method, path, None), 403, "forbidden")
    features = ok(Api(users["viewer"]).get("meta"))["features"]
    assert features == {"metrics": True, "periodic": True, "queue_pause": True,
                        "batches": True, "limiters": True, "profiles": False}


def test_the_shell_is_not_reachable_through_api_paths(users):
    problem_of(Api(users["viewer"]).get(""), 404, "not_found")
    response = Client().get("/admin/wurk/api/meta")
    assert response.status_code == 401 and response["Content-Type"] == "application/problem+json"


ODD_BODIES = [{"keys": None}, {"keys": [1, 2]}, {"keys": "abc"}, {"action": {}, "keys": []},
              {"action": ["x"]}, {"confirm_total": 1.5}, {"confirm_total": None}, {"x": [{}]}]


@pytest.mark.parametrize("method, path", [(m, p) for m, p, _ in MUTATIONS] + [
    ("POST", "sets/scheduled/all/enqueue"), ("POST", "periodic/abc/pause")])
def test_no_body_shape_makes_a_server_error(seeded, users, method, path):
    root = Api(users["superuser"])
    for body in ODD_BODIES:
        response = root.call(method, path, body)
        assert response.status_code < 500, (body, response.content)
        assert response["Content-Type"] in ("application/json", "application/problem+json")
