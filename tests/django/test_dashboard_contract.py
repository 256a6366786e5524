"""The front-end's contract with the JSON API, recorded from the real API.

The mock server (`static_src/dev/mock-server.mjs`) serves `static_src/dev/api-fixture.json`,
and `static_src/src/contract.ts` makes the TypeScript build check that fixture against the
interfaces in `api.ts`. This test calls every endpoint the SPA uses against a seeded
Redis and compares the shape of each answer (every field name and value type) with the
fixture's, so the API, the fixture and the front-end's types cannot drift apart. After
changing the API on purpose, record the fixture again:

    WURK_RECORD_API_FIXTURE=1 python -m pytest tests/django/test_dashboard_contract.py
"""

import json
import os
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.django.dashboard_helpers import Api, users_fixture  # noqa: F401
from wurk_django.core import Batch, deploy, keys
from wurk_django.core import Client as JobClient
from wurk_django.core.batch_callbacks import fire_death
from wurk_django.core.batch_redis import batch_keys, call
from wurk_django.core.launcher import Launcher
from wurk_django.core.limiter import Limiter
from wurk_django.core.metrics import Metrics
from wurk_django.core.payload import dumps, encode_backtrace
from wurk_django.core.redis import connection_for

pytestmark = pytest.mark.django_db

FIXTURE = Path(__file__).resolve().parents[2] / "static_src" / "dev" / "api-fixture.json"
RECORD = os.environ.get("WURK_RECORD_API_FIXTURE") == "1"
XSS = "<img src=x onerror=alert(1)>"
LID = "a1b2c3d4e5f60718"
# Objects whose keys are data (days, class names, option names), not field names.
MAPS = {"processed", "failed", "series", "extra", "options", "capsules"}
# (fixture key, method, path, query or body). A `:name` in the key matches any segment.
CALLS = [
    ("GET meta", "GET", "meta", {}),
    ("GET health", "GET", "health", {}),
    ("GET stats", "GET", "stats", {}),
    ("GET stats/history", "GET", "stats/history", {"days": 7}),
    ("GET processes", "GET", "processes", {}),
    ("GET work", "GET", "work", {"count": 100}),
    ("GET queues", "GET", "queues", {}),
    ("GET queues/:name", "GET", "queues/default", {}),
    ("GET queues/:name/jobs", "GET", "queues/default/jobs", {}),
    ("GET sets/retries", "GET", "sets/retries", {}),
    ("GET sets/scheduled", "GET", "sets/scheduled", {}),
    ("GET sets/dead", "GET", "sets/dead", {}),
    ("GET sets/:set/:key", "GET", "sets/retries/{retry_key}", {}),
    ("GET metrics", "GET", "metrics", {"period": "1h"}),
    ("GET metrics/:class", "GET", "metrics/shop.tasks.charge", {"period": "1h"}),
    ("GET periodic", "GET", "periodic", {}),
    ("GET periodic/:lid", "GET", f"periodic/{LID}", {}),
    ("GET snapshots", "GET", "snapshots", {"range": 3600}),
    ("GET batches", "GET", "batches", {}),
    ("GET batches/dead", "GET", "batches/dead", {}),
    ("GET batches/:bid", "GET", "batches/contract-parent", {}),
    ("POST batches/:bid/invalidate", "POST", "batches/contract-broken/invalidate", {}),
    ("GET limiters", "GET", "limiters", {}),
    ("GET limiters/:name", "GET", "limiters/stripe-acct_42", {}),
    ("POST limiters/:name/reset", "POST", "limiters/stripe-acct_42/reset", {}),
    ("POST periodic/:lid/run", "POST", f"periodic/{LID}/run", {}),
    ("POST queues/:name/pause", "POST", "queues/low/pause", {}),
    ("POST sets/:set/bulk", "POST", "sets/dead/bulk", {"action": "delete", "keys": ["1-x"]}),
]


def job(klass: str, *args, **fields) -> dict:
    now_ms = int(time.time() * 1000)
    return {"class": klass, "args": list(args), "queue": "default", "retry": True,
            "jid": fields.pop("jid"), "created_at": now_ms - 3_600_000,
            "enqueued_at": now_ms - 3_500_000, **fields}


def seed_jobs(redis_client) -> None:
    for n in range(3):
        JobClient.enqueue_to("default", "shop.tasks.charge", n, 500)
    JobClient.enqueue_to("low", "shop.tasks.report", "weekly")
    now_s, now_ms = time.time(), int(time.time() * 1000)
    failure = {"error_class": "ValueError", "error_message": "card declined",
               "failed_at": now_ms - 3_000_000, "retry_count": 0, "backtrace": 10,
               "error_backtrace": encode_backtrace(["shop/tasks.py:12:in `charge'"])}
    redis_client.zadd(keys.RETRY, {
        dumps(job("shop.tasks.charge", XSS, jid="a" * 24, **failure)): now_s + 600,
        dumps(job("HardJob", 2, jid="b" * 24, **{**failure, "retry_count": 3,
                                                 "retried_at": now_ms - 60_000})): now_s + 3600})
    redis_client.zadd(keys.SCHEDULE, {dumps(job("shop.tasks.report", 1, jid="c" * 24)):
                                      now_s + 7200})
    redis_client.zadd(keys.DEAD, {dumps(job("HardJob", 3, jid="d" * 24,
                                            **{**failure, "retry_count": 25})): now_s - 600})


def seed_process(config) -> None:
    """One live worker as its own heartbeat writes it, running one job."""
    launcher = Launcher(config)
    payload = dumps(job("shop.tasks.charge", 7, 500, jid="e" * 24))
    launcher.work_state.start("t1a2", "default", payload)
    launcher.heartbeat.beat()


def seed_metrics_and_loop(config, redis_client) -> None:
    now = datetime.now(UTC)
    metrics = Metrics()
    for elapsed_ms in (40, 45, 300):
        metrics.track("shop.tasks.charge", elapsed_ms, failed=False)
    metrics.track("shop.tasks.charge", 0, failed=True)
    metrics.flush(connection_for(config), now=now - timedelta(minutes=3))
    deploy.mark("v1.4.2", at=now - timedelta(minutes=20), config=config)
    redis_client.set(keys.stat("processed", now.strftime("%Y-%m-%d")), 1200)
    redis_client.set(keys.STAT_PROCESSED, 120345)
    redis_client.sadd(keys.PERIODIC, LID)
    redis_client.hset(keys.loop(LID), mapping={
        "schedule": "*/5 * * * *", "klass": "shop.tasks.cleanup", "tz": "Europe/Paris",
        "options": dumps({"queue": "low", "args": []}), "paused": "0",
        "lf": str(int(now.timestamp()) - 120), "nf": str(int(now.timestamp()) + 180)})
    redis_client.lpush(keys.loop_history(LID), dumps([int(now.timestamp()) - 120, "f" * 24]))
    for ago_s, processed in ((1800, 120300), (900, 120320), (0, 120345)):  # history snapshots
        redis_client.xadd(keys.HISTORY_METRICS, {
            "processed": processed, "failures": 12, "enqueued": 4, "retries": 2, "dead": 1,
            "scheduled": 1, "busy": 1}, id=f"{int((now.timestamp() - ago_s) * 1000)}-0")


def seed_limiters() -> None:
    """Two limiters as a job's first calls register them: one in use, one idle."""
    stripe = Limiter.concurrent("stripe-acct_42", 5, wait_timeout=0)
    stripe.acquire().take()  # one slot held (its lease ends on its own)
    # Of one type: the fixture's rows must share their option names for TypeScript.
    Limiter.concurrent("erp", 50, wait_timeout=5).within_limit(lambda: None)


def seed_batches(config) -> None:
    """A parent batch with a child, and a batch with a failing and a dead job, as their
    workers' scripts leave them."""
    connection = connection_for(config)
    with Batch.create("contract-parent", description="Nightly import", tags=["import"],
                      on_success="shop.callbacks.Import"):
        JobClient.enqueue_to("imports", "shop.tasks.load", 1)
        with Batch.create("contract-child", description=XSS, tags=["import"]):
            JobClient.enqueue_to("imports", "shop.tasks.load", 2)
    with Batch.create("contract-broken", on_death=("shop.callbacks.Import", {"page": 1})):
        failing = JobClient.enqueue_to("imports", "shop.tasks.load", 3)
        dying = JobClient.enqueue_to("imports", "shop.tasks.load", 4)
    for jid in (failing, dying):
        call(connection, "batch_ack_failed",
             batch_keys("contract-broken", "jids", "failed"), [jid])
    call(connection, "batch_ack_complete",
         batch_keys("contract-broken", "jids", "died", "failed", "pkids"), [dying])
    fire_death(connection, config, "contract-broken")


def shape(value, key: str | None = None):
    """Field names and JSON types of a value, lists reduced to their distinct shapes."""
    if isinstance(value, dict):
        if key in MAPS:
            return {"<map>": _distinct([shape(v) for v in value.values()])}
        return {name: shape(item, name) for name, item in sorted(value.items())}
    if isinstance(value, list):
        return _distinct([shape(item) for item in value])
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return "null" if value is None else "string"


def _distinct(shapes: list) -> list:
    return [json.loads(text) for text in sorted({json.dumps(s, sort_keys=True) for s in shapes})]


def record(api: Api) -> dict:
    retry_key = api.get("sets/retries").json()["items"][0]["key"]
    responses = {}
    for name, method, path, params in CALLS:
        path = path.format(retry_key=retry_key)
        response = api.get(path, **params) if method == "GET" else api.post(path, params)
        assert response["Content-Type"] in ("application/json", "application/problem+json")
        responses[name] = {"status": response.status_code, "body": response.json()}
    return responses


def test_the_mock_servers_fixture_has_the_real_apis_shape(config, redis_client, users):
    seed_jobs(redis_client)
    seed_process(config)
    seed_metrics_and_loop(config, redis_client)
    seed_limiters()
    seed_batches(config)
    recorded = record(Api(users["superuser"]))
    if RECORD:
        FIXTURE.write_text(json.dumps({
            "note": "Recorded from the real API by tests/django/test_dashboard_contract.py; "
                    "record it again there rather than edit it.",
            "recorded_at_ms": int(time.time() * 1000), "responses": recorded},
            indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    assert FIXTURE.exists(), f"{FIXTURE} is missing: record it (see this module's docstring)"
    fixture = json.loads(FIXTURE.read_text())["responses"]
    assert sorted(fixture) == sorted(recorded), "the fixture lists other endpoints"
    for name, answer in recorded.items():
        assert answer["status"] == fixture[name]["status"], name
        assert shape(answer["body"]) == shape(fixture[name]["body"]), (
            f"{name} answers another shape than static_src/dev/api-fixture.json holds: "
            "record the fixture again (see this module's docstring) and update api.ts")
