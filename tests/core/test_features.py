"""The hook points the Pro and Enterprise features use: client hooks by payload field and
push origin, push interceptors, job hooks around a real worker's run, death hooks."""

import json

import pytest

from tests.support.workers import wait_until
from wurk_django.core import Client, keys
from wurk_django.core.api import DeadSet
from wurk_django.core.features import HOOKS, PROMOTION, PUSH, REVIVAL, ClientHook, intercepted
from wurk_django.core.payload import dumps, loads
from wurk_django.core.redis import connection_for
from wurk_django.core.scheduled import Enqueuer

FAST = ("--heartbeat-interval", "0.5", "--poll-interval", "0.5")


@pytest.fixture
def seen():
    found = []

    def prepare(job, client, origin):
        found.append((job["jid"], origin))
        return None if job.get("mark") == "drop" else {**job, "stamped": origin}

    hook = ClientHook("mark", 10, prepare)
    HOOKS.add(hook)
    yield found
    HOOKS.remove(hook)


def test_a_client_hook_sees_only_jobs_with_its_field_and_knows_their_origin(config, seen,
                                                                            redis_client):
    client = Client(config)
    client.push({"class": "X", "args": [], "jid": "plain"})
    client.push({"class": "X", "args": [], "jid": "marked", "mark": "keep"})
    assert client.push({"class": "X", "args": [], "jid": "dropped", "mark": "drop"}) is None
    due = dumps({"class": "X", "args": [], "jid": "due", "queue": "default", "mark": "k"})
    redis_client.zadd(keys.SCHEDULE, {due: 1})
    Enqueuer(config, connection_for(config), client).enqueue_jobs()
    dead = dumps({"class": "X", "args": [], "jid": "dead", "queue": "default", "mark": "k"})
    redis_client.zadd(keys.DEAD, {dead: 1})
    [entry] = DeadSet(config)
    entry.retry()

    assert seen == [("marked", PUSH), ("dropped", PUSH), ("due", PROMOTION), ("dead", REVIVAL)]
    stored = {loads(raw)["jid"]: loads(raw) for raw in redis_client.lrange("queue:default",
                                                                           0, -1)}
    assert sorted(stored) == ["dead", "due", "marked", "plain"]
    assert [stored[j].get("stamped") for j in ("plain", "marked", "due", "dead")] == \
        [None, PUSH, PROMOTION, REVIVAL]


def test_an_interceptor_takes_pushes_over_and_none_reach_redis(config, redis_client):
    taken = []

    def take(jobs, config):
        taken.extend(job["jid"] for job in jobs)
        return True

    HOOKS.add_interceptor(take)
    try:
        Client(config).push({"class": "X", "args": [], "jid": "one"})
        assert intercepted([{"jid": "two"}], config)
    finally:
        HOOKS.remove(take)
    assert taken == ["one", "two"]
    assert redis_client.llen("queue:default") == 0
    assert not intercepted([{"jid": "three"}], config)


def events(redis_client, kind: str) -> list:
    return [json.loads(v) for v in redis_client.lrange(f"test:{kind}", 0, -1)]


@pytest.mark.slow
def test_job_hooks_wrap_runs_in_order_and_a_handled_job_is_acked_not_failed(
        config, start_worker, redis_client):
    client = Client(config)
    for jid, outcome, fields in (("plain", "ok", {}), ("wrapped", "ok", {"probe": "on"}),
                                 ("handled", "ok", {"probe": "handle"}),
                                 ("dies", "fail", {"probe": "on"})):
        # retry 0 given here: this process does not import the task (nor its hooks).
        client.push({"class": "tests.core.feature_jobs.Probed", "args": [outcome],
                     "jid": jid, "retry": 0, **fields})
    start_worker(*FAST, require="tests.core.feature_jobs")
    wait_until(lambda: events(redis_client, "deaths"), 20, message="the death hook")
    wait_until(lambda: redis_client.get(keys.STAT_PROCESSED) == b"4", 15, message="stats")

    performed = {jid for jid, _ in events(redis_client, "performed")}
    assert performed == {"plain", "wrapped", "dies"}
    hooks = events(redis_client, "hooks")
    wrapped = [event for event in hooks if event[1] == "wrapped"]
    assert wrapped == [["outer-in", "wrapped", "default"], ["inner", "wrapped"],
                       ["outer-out", "wrapped"]]
    assert ["inner", "handled"] in hooks and not any(e[1] == "plain" for e in hooks)
    # Only the job that raised failed; the handled one is acked, not retried or dead.
    assert redis_client.get(keys.STAT_FAILED) == b"1"
    assert events(redis_client, "deaths") == [["dies", "ValueError"]]
    assert [loads(raw)["jid"] for raw in redis_client.zrange(keys.DEAD, 0, -1)] == ["dies"]
    assert redis_client.zcard(keys.RETRY) == 0
    private = list(redis_client.scan_iter("queue:default|*"))
    wait_until(lambda: all(redis_client.llen(key) == 0 for key in private), 10,
               message="every job acknowledged")
