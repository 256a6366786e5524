"""Rate limiters against the suite's real Redis, from this process: construction checks,
what each call costs, registration and expiry, policies, the context form, outages."""

import json
import signal
import threading
import time
from types import SimpleNamespace

import pytest

from tests.support.redis_server import RedisServer
from tests.support.workers import wait_until
from wurk_django.core import (
    Config,
    WurkError,
    get_default_config,
    keys,
    set_default_config,
    wurk_task,
)
from wurk_django.core.api.limiters import LimiterSet
from wurk_django.core.errors import RedisUnavailableError
from wurk_django.core.features import HOOKS, JobRun
from wurk_django.core.limiter import Limiter, OverLimit
from wurk_django.core.limiter_algorithms import SETTINGS, sweep_sample
from wurk_django.core.limiter_reschedule import settle
from wurk_django.core.payload import dumps, loads
from wurk_django.core.redis import close_connections, connection_for


@pytest.fixture(autouse=True)
def fresh_limiters(config):
    """Each test starts on a flushed Redis: forget what this process registered."""
    SETTINGS.registered.clear()
    yield
    SETTINGS.registered.clear()
    Limiter.configure(redis_url=None)


def costs(redis_client) -> tuple[int, int]:
    """(EVALSHA calls, round trips) so far: replies written, minus the INFO reading them."""
    commands = redis_client.info("commandstats").get("cmdstat_evalsha", {}).get("calls", 0)
    return commands, redis_client.info("stats")["total_writes_processed"]


def delta(redis_client, run) -> tuple[int, int]:
    before = costs(redis_client)
    run()
    after = costs(redis_client)
    return after[0] - before[0], after[1] - before[1] - 2  # the two INFO replies of `after`


# --- bad input --------------------------------------------------------------------

@pytest.mark.parametrize("build, problem", [
    (lambda: Limiter.concurrent("bad name", 1), "name"),
    (lambda: Limiter.concurrent("", 1), "name"),
    (lambda: Limiter.concurrent("x/y", 1), "name"),
    (lambda: Limiter.concurrent("erp", 0), "size"),
    (lambda: Limiter.concurrent("erp", 2.5), "size"),
    (lambda: Limiter.concurrent("erp", True), "size"),
    (lambda: Limiter.concurrent("erp", 5, lock_timeout=0), "lock_timeout"),
    (lambda: Limiter.concurrent("erp", 5, wait_timeout=-1), "wait_timeout"),
    (lambda: Limiter.bucket("api", 10, "week"), "unit"),
    (lambda: Limiter.bucket("api", 10, 60), "unit"),
    (lambda: Limiter.window("api", 10, "fortnight"), "interval"),
    (lambda: Limiter.window("api", 10, float("nan")), "interval"),
    (lambda: Limiter.leaky("api", 10, 0), "drain"),
    (lambda: Limiter.points("api", 0, 5), "capacity"),
    (lambda: Limiter.points("api", 10, -1), "refill"),
    (lambda: Limiter.bucket("api", 10, "minute", ttl=3600), "ttl"),
    (lambda: Limiter.bucket("api", 10, "minute", ttl=86_399), "ttl"),
    (lambda: Limiter.bucket("api", 10, "minute", policy="drop"), "policy"),
    (lambda: Limiter.bucket("api", 10, "minute", reschedule=-1), "reschedule"),
    (lambda: Limiter.bucket("api", 10, "minute", backoff=5), "backoff"),
])
def test_bad_options_are_a_value_error_at_construction_naming_the_problem(build, problem,
                                                                          redis_client):
    with pytest.raises(ValueError, match=problem):
        build()
    assert redis_client.keys("*") == []


def test_building_a_limiter_touches_no_redis_and_the_minimum_ttl_is_one_day(redis_client):
    Limiter.concurrent("stripe-acct_1", 50, ttl=86_400)
    Limiter.bucket("api:user@example.com#7", 30, "minute")
    assert redis_client.keys("*") == []


# --- cost per call ------------------------------------------------------------------

def test_a_concurrent_call_is_one_round_trip_in_and_one_out(redis_client):
    Limiter.concurrent("warm-up", 5).within_limit(lambda: None)
    limiter = Limiter.concurrent("erp", 5)
    assert delta(redis_client, lambda: limiter.within_limit(lambda: None)) == (3, 2)
    assert delta(redis_client, lambda: limiter.within_limit(lambda: None)) == (2, 2)


@pytest.mark.parametrize("build", [
    lambda name: Limiter.bucket(name, 100, "minute"),
    lambda name: Limiter.window(name, 100, 60),
    lambda name: Limiter.leaky(name, 100, 60),
    lambda name: Limiter.points(name, 100, 10),
])
def test_the_other_limiters_cost_one_round_trip_a_call(build, redis_client):
    build("warm-up").within_limit(lambda: None)  # opens the connection, loads the script
    limiter = build("api")
    # The first call registers the limiter in the same round trip.
    assert delta(redis_client, lambda: limiter.within_limit(lambda: None)) == (2, 1)
    assert delta(redis_client, lambda: limiter.within_limit(lambda: None)) == (1, 1)


def test_the_first_call_registers_the_limiter_in_the_same_round_trip(redis_client):
    limiter = Limiter.concurrent("stripe-acct_9", 3, lock_timeout=10)
    limiter.within_limit(lambda: None)
    meta = {k.decode(): v.decode() for k, v in redis_client.hgetall("lmtr:stripe-acct_9").items()}
    options = json.loads(meta["options"])
    assert meta["type"] == "concurrent" and options["size"] == 3
    assert options["lock_timeout"] == 10 and len(meta["fingerprint"]) == 64
    assert redis_client.smembers(keys.LIMITER_LIST) == {b"stripe-acct_9"}
    assert 7_776_000 - 5 < redis_client.ttl("lmtr:stripe-acct_9") <= 7_776_000


# --- behaviour ----------------------------------------------------------------------

def test_within_limit_returns_the_result_and_passes_arguments():
    limiter = Limiter.concurrent("erp", 1)
    assert limiter.within_limit(lambda a, b=0: a + b, 40, b=2) == 42
    assert limiter.status()["used"] == 0  # the slot went back


def test_a_full_concurrent_limiter_raises_over_limit_after_wait_timeout():
    limiter = Limiter.concurrent("erp", 1, wait_timeout=0.2)
    called = []
    with limiter.acquire(), pytest.raises(OverLimit) as raised:
        limiter.within_limit(called.append, 1)
    assert raised.value.limiter is limiter and called == []
    metrics = limiter.status()["metrics"]
    assert metrics["overages"] == 1 and metrics["held"] == 1 and metrics["immediate"] == 1


def test_a_waiter_takes_the_slot_as_soon_as_it_frees_and_counts_as_waited():
    limiter = Limiter.concurrent("erp", 1, wait_timeout=10)
    holder = limiter.acquire()
    holder.take()
    got = []
    waiter = threading.Thread(target=lambda: got.append(limiter.within_limit(lambda: "in")))
    waiter.start()
    wait_until(lambda: limiter.status()["metrics"]["held"] == 1 and waiter.is_alive(), 5)
    holder.release()
    waiter.join(10)
    assert got == ["in"]
    metrics = limiter.status()["metrics"]
    assert metrics["waited"] == 1 and metrics["wait_ms"] > 0


@pytest.mark.parametrize("policy", ["ignore", "skip"])
def test_policy_ignore_skips_the_call_and_returns_none(policy):
    limiter = Limiter.bucket("api", 1, "hour", wait_timeout=0, policy=policy)
    assert limiter.within_limit(lambda: "first") == "first"
    called = []
    assert limiter.within_limit(called.append, "second") is None
    assert called == [] and limiter.status()["metrics"]["overages"] == 1
    with pytest.raises(ValueError, match="policy='raise'"):
        limiter.acquire()


def test_a_bucket_call_can_charge_several_units_and_resets_at_the_boundary():
    limiter = Limiter.bucket("api", 10, "hour", wait_timeout=0)
    with limiter.acquire(used=7):
        pass
    status = limiter.status()
    assert status["used"] == 7 and status["available"] == 3
    assert status["reset_at"] % 3600 == 0
    with pytest.raises(OverLimit):
        limiter.acquire(used=4).take()
    with pytest.raises(ValueError, match="never fit"):
        limiter.acquire(used=11)


def test_points_are_spent_at_once_and_the_real_cost_is_settled_after(redis_client):
    limiter = Limiter.points("shopify", 1000, 0.001)  # refills too slowly to matter here
    with limiter.acquire(estimate=600) as handle:
        handle.points_used(100)
    assert 99 < limiter.status()["used"] < 101
    with limiter.acquire(estimate=800):
        pass
    with pytest.raises(OverLimit):  # at once: a points limiter never waits
        limiter.acquire(estimate=200).take()
    with pytest.raises(ValueError, match="estimate"):
        Limiter.bucket("api", 10, "hour").acquire(estimate=3)


def test_unlimited_admits_everything_and_touches_no_redis(redis_client):
    limiter = Limiter.unlimited()
    assert [limiter.within_limit(lambda n=n: n) for n in range(100)] == list(range(100))
    with limiter.acquire(estimate=5) as handle:
        handle.points_used(9)
    assert limiter.status()["limit"] is None and redis_client.keys("*") == []


def test_reset_and_delete(redis_client):
    limiter = Limiter.window("erp", 2, 3600, wait_timeout=0)
    limiter.within_limit(lambda: None)
    limiter.within_limit(lambda: None)
    limiter.reset()
    assert limiter.status()["used"] == 0
    limiter.within_limit(lambda: None)
    limiter.delete()
    assert redis_client.keys("lmtr*") == []


# --- thousands of names: expiry and the sweep -----------------------------------------

def test_every_key_expires_and_the_list_is_swept_of_expired_names(redis_client):
    for n in range(50):
        Limiter.concurrent(f"stripe-{n}", 2).within_limit(lambda: None)
        Limiter.leaky(f"gh-{n}", 5, 60).within_limit(lambda: None)
    state = set(redis_client.keys("lmtr*")) - {keys.LIMITER_LIST.encode()}
    assert state and all(redis_client.ttl(key) > 0 for key in state)
    assert redis_client.scard(keys.LIMITER_LIST) == 100
    for n in range(40):  # their meta expired
        redis_client.delete(f"lmtr:stripe-{n}", f"lmtr:gh-{n}")
    assert sweep_sample(connection_for(get_default_config()), 1000) == 80
    assert redis_client.smembers(keys.LIMITER_LIST) == (
        {f"stripe-{n}".encode() for n in range(40, 50)} | {f"gh-{n}".encode()
                                                           for n in range(40, 50)})


def test_reading_a_limiter_for_display_never_registers_it(redis_client):
    Limiter.concurrent("erp", 5)  # built, never called
    assert LimiterSet().fetch("erp") is None
    assert LimiterSet().page().total == 0
    assert redis_client.keys("*") == []


# --- a Redis outage -----------------------------------------------------------------

def test_a_redis_outage_while_acquiring_is_a_wurk_error_and_the_call_never_runs():
    server = RedisServer().start()
    try:
        Limiter.configure(redis_url=server.url)
        limiter = Limiter.concurrent("erp", 1, wait_timeout=30)
        limiter.within_limit(lambda: None)
        server.stop()
        called = []
        with pytest.raises(RedisUnavailableError) as raised:
            limiter.within_limit(called.append, 1)
        assert isinstance(raised.value, WurkError) and called == []
    finally:
        server.cleanup()
        close_connections()


def test_redis_going_away_while_a_caller_waits_ends_the_wait_with_a_wurk_error():
    server = RedisServer().start()
    try:
        Limiter.configure(redis_url=server.url)
        limiter = Limiter.concurrent("erp", 1, wait_timeout=60)
        holder = limiter.acquire()
        holder.take()
        outcome = []

        def wait():
            try:
                limiter.within_limit(lambda: None)
                outcome.append("ran")
            except Exception as exc:  # noqa: BLE001 - whatever it is, the test shows it
                outcome.append(exc)

        waiter = threading.Thread(target=wait)
        waiter.start()
        wait_until(lambda: limiter.status()["metrics"]["held"] == 1, 5)
        server.stop()
        waiter.join(10)  # far less than the 60 s it was allowed to wait
        assert not waiter.is_alive()
        assert len(outcome) == 1 and isinstance(outcome[0], RedisUnavailableError)
    finally:
        server.cleanup()
        close_connections()


def test_a_redis_that_stops_answering_is_a_wurk_error_within_the_network_timeout():
    server = RedisServer().start()
    try:
        set_default_config(Config(redis_url=server.url, network_timeout_s=0.5))
        limiter = Limiter.concurrent("erp", 1, wait_timeout=30)
        limiter.within_limit(lambda: None)
        server.process.send_signal(signal.SIGSTOP)  # the socket stays open, nothing answers
        try:
            with pytest.raises(RedisUnavailableError):
                limiter.within_limit(lambda: None)
        finally:
            server.process.send_signal(signal.SIGCONT)
    finally:
        server.cleanup()
        close_connections()


def test_configured_errors_count_as_over_limit_in_jobs():
    class TooManyRequests(Exception):
        pass

    try:
        Limiter.configure(errors=[TooManyRequests])
        assert OverLimit in HOOKS.claimed and TooManyRequests in HOOKS.claimed
        with pytest.raises(ValueError, match="exception classes"):
            Limiter.configure(errors=["429"])
    finally:
        Limiter.configure(errors=[])
    assert OverLimit in HOOKS.claimed and TooManyRequests not in HOOKS.claimed


def test_a_limiter_follows_the_default_config(redis_url, redis_client):
    other = RedisServer().start()
    try:
        set_default_config(Config(redis_url=other.url))
        Limiter.bucket("api", 5, "minute").within_limit(lambda: None)
        assert redis_client.keys("lmtr*") == []
        set_default_config(Config(redis_url=redis_url))
        Limiter.bucket("api", 5, "minute").within_limit(lambda: None)
        assert redis_client.exists("lmtr:api")
    finally:
        other.cleanup()


# --- the worker's settling of an over-limit job --------------------------------------

def fetched_run(config, connection, raw: bytes, private: str | None) -> JobRun:
    unit = SimpleNamespace(private_queue=private) if private else SimpleNamespace()
    return JobRun(loads(raw), raw, "default", None, config, connection, unit)


def test_a_refused_job_leaves_the_private_list_for_schedule_in_one_step(config, redis_client):
    limiter = Limiter.concurrent("erp", 1, backoff=lambda limiter, job, exc: 60)
    raw = dumps({"class": "app.Charge", "args": [1], "jid": "j" * 24, "queue": "default",
                 "enqueued_at": 1.5})
    private = "queue:default|host|1|nonce|0"
    redis_client.lpush(private, raw)
    connection = connection_for(config)
    assert settle(fetched_run(config, connection, raw, private), OverLimit(limiter=limiter))
    assert redis_client.llen(private) == 0
    [(member, at)] = redis_client.zrange(keys.SCHEDULE, 0, -1, withscores=True)
    job = loads(member)
    assert job["jid"] == "j" * 24 and job["overrated"] == 1 and "enqueued_at" not in job
    assert 55 < at - time.time() <= 60
    # Given back meanwhile (its copy runs or waits again elsewhere): nothing is doubled.
    redis_client.delete(keys.SCHEDULE)
    assert settle(fetched_run(config, connection, raw, private), OverLimit(limiter=limiter))
    assert redis_client.zcard(keys.SCHEDULE) == 0


def test_a_job_run_inline_gets_its_over_limit_error_and_nothing_is_rescheduled(redis_client):
    limiter = Limiter.bucket("lt-inline", 1, "day", wait_timeout=0)
    limiter.within_limit(lambda: None)

    @wurk_task
    def inline_over_limit():
        limiter.within_limit(lambda: None)

    with pytest.raises(OverLimit):
        inline_over_limit.perform_inline()
    assert redis_client.zcard(keys.SCHEDULE) == 0
