"""Retries: Sidekiq's backoff, the failure fields, hooks, exhaustion and the dead set."""

import time
from collections import Counter

import pytest

from wurk_django.core import Job, keys
from wurk_django.core.payload import decode_backtrace, dumps, loads
from wurk_django.core.redis import connection_for
from wurk_django.core.retry import JobRetry, RetryHandled, base_delay, jitter, send_to_dead


@pytest.mark.parametrize("count", range(25))
def test_backoff_delay_and_jitter_bounds_match_sidekiq(count):
    assert base_delay(count) == count ** 4 + 15
    draws = {jitter(count) for _ in range(400)}
    assert min(draws) >= 0
    assert max(draws) < 10 * (count + 1)
    # 400 draws over at most 250 values: both ends of the range are reached.
    if count < 3:
        assert draws == set(range(10 * (count + 1)))


def test_backoff_table_from_the_spec():
    assert [base_delay(c) for c in (0, 1, 2, 5, 10, 24)] == [15, 16, 31, 640, 10_015, 331_791]
    assert sum(base_delay(c) for c in range(25)) == 1_763_395


class Flaky(Job):
    wurk_options = {"queue": "work", "retry": 3, "backtrace": 2}


class Hooked(Job):
    wurk_options = {"queue": "work"}
    decision = None

    @classmethod
    def retry_in(cls, count, exc, job):
        return cls.decision

    @classmethod
    def retries_exhausted(cls, job, exc):
        cls.exhausted_with = (job["jid"], str(exc))
        return cls.exhausted_outcome


def _fail(retrier, task, job, exc=None):
    raw = dumps(job)

    def boom():
        raise (exc or ValueError("card declined"))

    with pytest.raises(RetryHandled):
        retrier.local_guard(task, raw, job["queue"], boom)


def _retry_entries(redis_client):
    return [(loads(member), score) for member, score in redis_client.zrange(keys.RETRY, 0, -1,
                                                                            withscores=True)]


@pytest.fixture
def retrier(config):
    return JobRetry(config, connection_for(config))


def test_first_failure_books_a_retry_with_sidekiq_fields(retrier, redis_client):
    job = {"retry": 3, "backtrace": 2, "queue": "work", "class": Flaky.wire_name, "args": [1],
           "jid": "a" * 24,
           "created_at": 1739522580123, "enqueued_at": 1739522580125, "custom": {"k": 1}}
    before = time.time()
    _fail(retrier, Flaky, job)
    [(booked, score)] = _retry_entries(redis_client)
    assert booked["retry_count"] == 0
    assert isinstance(booked["failed_at"], int) and booked["failed_at"] >= before * 1000 - 1
    assert "retried_at" not in booked
    assert booked["error_message"] == "card declined"
    assert booked["error_class"] == "ValueError"
    assert booked["custom"] == {"k": 1}  # unknown keys survive a rewrite
    assert before + 15 <= score < time.time() + 15 + 10
    frames = decode_backtrace(booked["error_backtrace"])
    assert len(frames) == 2  # backtrace=2 keeps the first two, innermost first
    assert frames[0].endswith(":in 'boom'")


def test_later_failures_count_up_and_set_retried_at(retrier, redis_client):
    job = {"retry": 5, "queue": "work", "class": Flaky.wire_name, "args": [], "jid": "b" * 24,
           "retry_count": 2, "failed_at": 1739522580301}
    _fail(retrier, Flaky, job)
    [(booked, score)] = _retry_entries(redis_client)
    assert booked["retry_count"] == 3
    assert booked["failed_at"] == 1739522580301
    assert isinstance(booked["retried_at"], int)
    assert score >= time.time() + base_delay(3) - 1


def test_retry_queue_replaces_the_queue(retrier, redis_client):
    job = {"retry": True, "queue": "work", "retry_queue": "slow-lane", "class": Flaky.wire_name,
           "args": [], "jid": "c" * 24}
    _fail(retrier, Flaky, job)
    [(booked, _)] = _retry_entries(redis_client)
    assert booked["queue"] == "slow-lane"


def test_exhausted_retries_go_to_dead_and_run_death_handlers(retrier, config, redis_client):
    deaths = []
    config.death_handlers.append(lambda job, exc: deaths.append((job["jid"], str(exc))))
    job = {"retry": 3, "queue": "work", "class": Flaky.wire_name, "args": [], "jid": "d" * 24,
           "retry_count": 2}
    _fail(retrier, Flaky, job)
    assert redis_client.zcard(keys.RETRY) == 0
    [dead] = redis_client.zrange(keys.DEAD, 0, -1)
    assert loads(dead)["retry_count"] == 3
    assert deaths == [("d" * 24, "card declined")]


def test_retry_zero_goes_straight_to_dead_and_false_never(retrier, config, redis_client):
    deaths = []
    config.death_handlers.append(lambda job, exc: deaths.append(job["jid"]))
    _fail(retrier, Flaky, {"retry": 0, "queue": "work", "class": Flaky.wire_name, "args": [],
                           "jid": "e" * 24})
    assert redis_client.zcard(keys.DEAD) == 1
    raw = dumps({"retry": False, "queue": "work", "class": Flaky.wire_name, "args": [],
                 "jid": "f" * 24})
    # retry=False: the local guard lets it through; the global guard runs death handlers.
    with pytest.raises(RetryHandled):
        retrier.global_guard(raw, "work", lambda: retrier.local_guard(
            Flaky, raw, "work", lambda: (_ for _ in ()).throw(ValueError("x"))))
    assert redis_client.zcard(keys.DEAD) == 1
    assert deaths == ["e" * 24, "f" * 24]


def test_retry_for_window_exhausts_by_time(retrier, redis_client):
    long_ago_ms = int((time.time() - 3600) * 1000)
    job = {"retry": 25, "retry_for": 60, "queue": "work", "class": Flaky.wire_name, "args": [],
           "jid": "1" * 24, "retry_count": 0, "failed_at": long_ago_ms}
    _fail(retrier, Flaky, job)
    assert redis_client.zcard(keys.RETRY) == 0
    assert redis_client.zcard(keys.DEAD) == 1


@pytest.mark.parametrize("decision,where", [(120, "retry"), ("kill", "dead"),
                                            ("discard", None), ("default", "retry"),
                                            (None, "retry"), (0, "retry")])
def test_retry_in_hook_decides(retrier, config, redis_client, decision, where):
    Hooked.decision = decision
    Hooked.exhausted_outcome = None
    deaths = []
    config.death_handlers.append(lambda job, exc: deaths.append(job))
    job = {"retry": True, "queue": "work", "class": Hooked.wire_name, "args": [], "jid": "2" * 24}
    before = time.time()
    _fail(retrier, Hooked, job)
    assert redis_client.zcard(keys.RETRY) == (1 if where == "retry" else 0)
    assert redis_client.zcard(keys.DEAD) == (1 if where == "dead" else 0)
    if decision == 120:
        [(_, score)] = _retry_entries(redis_client)
        assert before + 120 <= score < time.time() + 120 + 10  # jitter added to hook delays
    if decision == "discard":
        assert deaths and isinstance(deaths[0]["discarded_at"], int)


def test_retries_exhausted_hook_may_discard(retrier, redis_client):
    Hooked.decision = None
    Hooked.exhausted_outcome = "discard"
    job = {"retry": 1, "queue": "work", "class": Hooked.wire_name, "args": [], "jid": "3" * 24,
           "retry_count": 0}
    _fail(retrier, Hooked, job)
    assert Hooked.exhausted_with == ("3" * 24, "card declined")
    assert redis_client.zcard(keys.DEAD) == 0


def test_dead_false_keeps_jobs_out_of_dead(retrier, redis_client):
    job = {"retry": 0, "dead": False, "queue": "work", "class": Flaky.wire_name, "args": [],
           "jid": "4" * 24}
    _fail(retrier, Flaky, job)
    assert redis_client.zcard(keys.DEAD) == 0


def test_a_raising_hook_is_reported_and_the_default_delay_used(retrier, config, redis_client):
    reported = []
    config.error_handlers.append(lambda exc, ctx, cfg: reported.append(ctx["context"]))

    class BadHook(Job):
        wurk_options = {"queue": "work"}

        @classmethod
        def retry_in(cls, count, exc, job):
            raise RuntimeError("hook bug")

    _fail(retrier, BadHook, {"retry": True, "queue": "work", "class": BadHook.wire_name,
                             "args": [], "jid": "5" * 24})
    assert redis_client.zcard(keys.RETRY) == 1
    assert any("retry_in" in context for context in reported)


def test_dead_set_trim_keeps_max_minus_one_and_drops_old(config, redis_client):
    small = config.replace(dead_max_jobs=5, dead_timeout_in_seconds=1000)
    connection = connection_for(small)
    redis_client.zadd(keys.DEAD, {b"ancient": time.time() - 5000})
    for index in range(7):
        send_to_dead(connection, small, f"job-{index}".encode())
    members = redis_client.zrange(keys.DEAD, 0, -1)
    assert b"ancient" not in members
    # ZREMRANGEBYRANK dead 0 -5 keeps four: Sidekiq's exact arithmetic.
    assert members == [b"job-3", b"job-4", b"job-5", b"job-6"]
    assert Counter(members)[b"job-6"] == 1
