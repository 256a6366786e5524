"""The dashboard API's metrics (written by the engine's own writer) and periodic loops."""

import time
from datetime import UTC, datetime, timedelta

import pytest

from tests.django.dashboard_helpers import Api, ok, problem_of, users_fixture  # noqa: F401
from wurk_django.core import deploy, keys
from wurk_django.core.api import MetricsQuery
from wurk_django.core.metrics import Metrics, bucket_for
from wurk_django.core.payload import dumps, loads
from wurk_django.core.redis import connection_for

pytestmark = pytest.mark.django_db


def record(config, at: datetime, klass: str, runs_ms: list[int], failures: int = 0) -> None:
    metrics = Metrics()
    for elapsed in runs_ms:
        metrics.track(klass, elapsed, failed=False)
    for _ in range(failures):
        metrics.track(klass, 0, failed=True)
    metrics.flush(connection_for(config), now=at)


def minute_ms(at: datetime) -> int:
    return int(at.replace(second=0, microsecond=0).timestamp() * 1000)


@pytest.fixture
def viewer(config, users):
    return Api(users["viewer"])


def test_top_classes_over_an_hour(config, viewer):
    now = datetime.now(UTC)
    record(config, now - timedelta(minutes=5), "app.Slow", [1000, 3000], failures=1)
    record(config, now - timedelta(minutes=2), "app.Slow", [2000])
    record(config, now - timedelta(minutes=2), "app.Fast", [10, 30])
    record(config, now - timedelta(minutes=90), "app.Old", [5])  # outside the hour
    stamp = deploy.mark("release 7", at=now - timedelta(minutes=10), config=config)
    data = ok(viewer.get("metrics", period="1h"))
    assert data["bucket_s"] == 60 and len(data["buckets"]) == 60
    assert data["items"] == [
        {"class": "app.Slow", "processed": 4, "failed": 1, "total_ms": 6000, "avg_ms": 2000.0},
        {"class": "app.Fast", "processed": 2, "failed": 0, "total_ms": 40, "avg_ms": 20.0}]
    assert sum(point[0] for point in data["series"]["app.Slow"]) == 4
    two_minutes_ago = data["buckets"].index(minute_ms(now - timedelta(minutes=2)))
    assert data["series"]["app.Slow"][two_minutes_ago] == [1, 0, 2000]
    assert [mark["label"] for mark in data["marks"]] == ["release 7"]
    assert data["marks"][0]["at"] == stamp
    assert [i["class"] for i in ok(viewer.get("metrics", period="2h"))["items"]][-1] == "app.Old"
    assert [i["class"] for i in ok(viewer.get("metrics", q="FAST"))["items"]] == ["app.Fast"]


def test_long_periods_read_the_ten_minute_rollups(config, viewer, redis_client):
    now = datetime.now(UTC)
    record(config, now - timedelta(hours=30), "app.Nightly", [100, 200])
    redis_client.delete(keys.metrics_minute(now - timedelta(hours=30)))  # minute keys expire
    assert ok(viewer.get("metrics", period="24h"))["items"] == []
    data = ok(viewer.get("metrics", period="48h"))
    assert data["bucket_s"] == 600 and len(data["buckets"]) == 288
    assert data["items"][0] == {"class": "app.Nightly", "processed": 2, "failed": 0,
                                "total_ms": 300, "avg_ms": 150.0}


def test_one_class_per_minute_with_histograms(config, viewer, redis_client):
    now = datetime.now(UTC)
    record(config, now - timedelta(minutes=3), "app.Slow", [15, 15, 700])
    # Sidekiq 7 wrote the same counters without the `h|` prefix: both are read.
    legacy = keys.histogram("app.Slow", now - timedelta(minutes=3))[2:]
    redis_client.execute_command("BITFIELD", legacy, "INCRBY", "u16", f"#{bucket_for(15)}", 2)
    redis_client.rpush(keys.histogram("app.Slow", now - timedelta(minutes=4))[2:], "a list")
    data = ok(viewer.get("metrics/app.Slow", period="1h"))
    assert data["totals"] == {"class": "app.Slow", "processed": 3, "failed": 0,
                              "total_ms": 730, "avg_ms": 243.33}
    assert data["histogram"]["counts"][bucket_for(15)] == 4
    assert data["histogram"]["counts"][bucket_for(700)] == 1
    assert len(data["histogram"]["bounds_ms"]) == 25 and len(data["histograms"]) == 60
    minute = data["buckets"].index(minute_ms(now - timedelta(minutes=3)))
    assert data["histograms"][minute][bucket_for(700)] == 1
    assert data["series"][minute] == [3, 0, 730]
    problem_of(viewer.get("metrics/app.Slow", period="24h"), 400, "invalid_request")
    problem_of(viewer.get("metrics", period="3h"), 400, "invalid_request")


def test_class_names_with_slashes_and_empty_windows(config, viewer):
    data = ok(viewer.get("metrics/Ruby::Name/With/Slashes", period="8h"))
    assert data["class"] == "Ruby::Name/With/Slashes" and len(data["buckets"]) == 480
    assert data["totals"]["processed"] == 0 and data["histogram"]["counts"] == [0] * 26


def test_query_limits_match_the_key_lifetimes(config):
    query = MetricsQuery(config)
    with pytest.raises(ValueError):
        query.for_job("x", 481)
    with pytest.raises(ValueError):
        query.top_jobs(72 * 60 + 1)


# --- periodic ---------------------------------------------------------------------

def add_loop(redis_client, lid: str, **fields) -> None:
    redis_client.sadd("periodic", lid)
    redis_client.hset(f"loops:{lid}", mapping={
        "schedule": "*/5 * * * *", "klass": "app.Report", "tz": "Europe/Paris", "paused": "0",
        "options": dumps({"queue": "low", "args": ["nightly", 12345678901234567890],
                          "retry": 2}),
        "lf": "1739522400", "nf": "1739522700", **fields})


def test_periodic_is_empty_without_loops(config, viewer):
    data = ok(viewer.get("periodic"))
    assert data["items"] == [] and data["total"] == 0 and data["leader"] is None
    problem_of(viewer.get("periodic/abc"), 404, "not_found")


def test_periodic_lists_loops_and_their_history(config, viewer, redis_client):
    add_loop(redis_client, "a" * 16)
    add_loop(redis_client, "b" * 16, paused="1")
    redis_client.sadd("periodic", "c" * 16)  # no hash: unregistered meanwhile, skipped
    redis_client.lpush(f"loop-history:{'a' * 16}", dumps([1739522400, "j1"]), "garbage",
                       dumps([1739522700, "j2"]))
    redis_client.set("dear-leader", "host:1:abc")
    data = ok(viewer.get("periodic"))
    first, paused = data["items"]
    assert (first["lid"], first["schedule"], first["class"], first["queue"], first["tz"]) == (
        "a" * 16, "*/5 * * * *", "app.Report", "low", "Europe/Paris")
    assert first["args_preview"] == '["nightly", 12345678901234567890]'
    assert (first["last_fired_at_ms"], first["next_fire_at_ms"]) == (1739522400000,
                                                                     1739522700000)
    assert paused["paused"] is True and paused["next_fire_at_ms"] is None
    redis_client.hdel(f"loops:{'a' * 16}", "nf")  # not computed yet: the API computes it
    upcoming = ok(viewer.get("periodic"))["items"][0]["next_fire_at_ms"] / 1000
    assert time.time() < upcoming <= time.time() + 300 and upcoming % 300 == 0
    assert data["leader"] == "host:1:abc"
    detail = ok(viewer.get(f"periodic/{'a' * 16}"))
    assert detail["history"] == [{"fired_at_ms": 1739522700000, "jid": "j2"},
                                 {"fired_at_ms": 1739522400000, "jid": "j1"}]


def test_periodic_actions(config, users, redis_client):
    add_loop(redis_client, "a" * 16)
    root = Api(users["superuser"])
    ok(root.post(f"periodic/{'a' * 16}/pause"))
    assert redis_client.hget(f"loops:{'a' * 16}", "paused") == b"1"
    ok(root.post(f"periodic/{'a' * 16}/resume"))
    assert redis_client.hget(f"loops:{'a' * 16}", "paused") == b"0"
    # Resuming moves the next fire past now: slots missed while paused are not made up.
    assert int(redis_client.hget(f"loops:{'a' * 16}", "nf")) > time.time()
    redis_client.hset(f"loops:{'a' * 16}", "lf", "1739522400")
    before_s = int(time.time())
    jid = ok(root.post(f"periodic/{'a' * 16}/run"))["jid"]
    [pushed] = [loads(raw) for raw in redis_client.lrange(keys.queue("low"), 0, -1)]
    assert (pushed["jid"], pushed["class"], pushed["retry"]) == (jid, "app.Report", 2)
    assert pushed["args"] == ["nightly", 12345678901234567890]
    # A manual run is the loop's last run, as `wurk_cron fire` records it.
    detail = ok(root.get(f"periodic/{'a' * 16}"))
    assert before_s <= detail["last_fired_at_ms"] / 1000 <= time.time()
    assert detail["history"][0]["jid"] == jid
    for action in ("pause", "resume", "run"):
        problem_of(root.post(f"periodic/nope/{action}"), 404, "not_found")
    assert not redis_client.exists("loops:nope")
