"""Arguments JSON cannot write and run times that never come: a JobArgumentError naming
the problem, at the call, with nothing written to Redis."""

import enum
import math
import time
import warnings
from datetime import UTC, datetime, timedelta

import pytest

from wurk_django import wurk_task
from wurk_django.core import Client, JobArgumentError, keys, testing, testing_modes
from wurk_django.core.payload import MAX_ARG_NESTING, MAX_AT, loads


@wurk_task(queue="bad-input")
def record(*args):
    pass


class Level(enum.IntEnum):
    HIGH = 3


def nested(levels: int) -> list:
    """A list nested `levels` deep: nested(1) == [], nested(2) == [[]]."""
    value: list = []
    for _ in range(levels - 1):
        value = [value]
    return value


def queued(redis_client):
    return [loads(raw) for raw in redis_client.lrange(keys.queue("bad-input"), 0, -1)]


# --- arguments -----------------------------------------------------------------------

@pytest.mark.parametrize("bad", ["lone \ud800 surrogate", {"k\udfff": 1}, ["ok", "\udc80"]])
def test_a_lone_surrogate_is_refused_naming_the_argument(config, redis_client, bad):
    # Before: a raw UnicodeEncodeError from the UTF-8 encoder.
    with pytest.raises(JobArgumentError, match=r"^argument 1.* lone surrogate"):
        record.perform_async("fine", bad)
    with pytest.raises(JobArgumentError, match="lone surrogate"):
        record.perform_in(60, "fine", bad)
    with pytest.raises(JobArgumentError, match=r"^argument 0.* lone surrogate"):
        record.perform_bulk([["fine"], [bad]])
    assert redis_client.dbsize() == 0


def test_a_lone_surrogate_is_refused_in_fake_mode_too(config):
    with testing("fake"):
        with pytest.raises(JobArgumentError, match="lone surrogate"):
            record.perform_async("\ud800")
        assert testing_modes.jobs_for(record.name) == []


def test_nesting_is_limited_to_what_sidekiqs_json_parser_reads(config, redis_client):
    # Ruby's JSON.parse refuses documents deeper than 100 arrays and objects (the job
    # object and its args array are two): a deeper job could never run on Sidekiq.
    record.perform_async(nested(MAX_ARG_NESTING))
    assert len(queued(redis_client)) == 1
    for levels in (MAX_ARG_NESTING + 1, 5000):  # 5000: a RecursionError before
        with pytest.raises(JobArgumentError, match=r"^argument 1 of type builtins.list is "
                                                   r"nested more than 98 levels deep"):
            record.perform_async(1, nested(levels))
    assert len(queued(redis_client)) == 1


def test_warn_mode_pushes_what_json_can_write(config, redis_client):
    warn = Client(config.replace(on_complex_arguments="warn"))
    with pytest.warns(UserWarning, match="argument 0 of type builtins.tuple"):
        warn.push({"class": "X", "args": [(1, 2), Level.HIGH], "queue": "bad-input"})
    [job] = queued(redis_client)
    assert job["args"] == [[1, 2], 3]  # a tuple is written as a list, an IntEnum as its int


@pytest.mark.parametrize("bad", [{1, 2}, datetime(2025, 1, 1), float("nan"), object()])
def test_warn_mode_refuses_what_json_cannot_write_after_warning(config, redis_client, bad):
    # Before: the warning, then json's raw TypeError (or ValueError for NaN).
    warn = Client(config.replace(on_complex_arguments="warn"))
    with pytest.warns(UserWarning, match="argument 1"):
        with pytest.raises(JobArgumentError, match=r"^argument 1 of type .*JSON cannot write "
                                                   r"it, so the job is not pushed"):
            warn.push({"class": "X", "args": ["fine", bad], "queue": "bad-input"})
    assert redis_client.dbsize() == 0


def test_with_the_check_off_an_unwritable_value_is_still_named(config, redis_client):
    unchecked = Client(config.replace(on_complex_arguments=False))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(JobArgumentError, match=r"^argument 0\['when'\] of type builtins.set "
                                                   r"cannot be written as JSON"):
            unchecked.push({"class": "X", "args": [{"when": {1}}]})
    with pytest.raises(JobArgumentError, match=r"^job option 'extra' of type builtins.set"):
        unchecked.push({"class": "X", "args": [], "extra": {1}})
    assert redis_client.dbsize() == 0


# --- run times -----------------------------------------------------------------------

NEVER = [math.inf, -math.inf, math.nan, 1e300, MAX_AT + 1, timedelta(days=999_999_999)]


@pytest.mark.parametrize("interval", NEVER)
def test_a_delay_that_never_comes_is_refused(config, redis_client, interval):
    # Before: inf and 1e300 were stored at a score that never comes due, NaN ran at once.
    with pytest.raises(JobArgumentError, match="a schedule"):
        record.perform_in(interval, 1)
    with pytest.raises(JobArgumentError, match="a schedule"):
        record.perform_at(interval, 1)
    with pytest.raises(JobArgumentError, match="a schedule"):
        record.set(wait=interval)
    with pytest.raises(JobArgumentError, match="a schedule"):
        Client.enqueue_to_in("bad-input", interval, "X", 1)
    assert redis_client.dbsize() == 0


@pytest.mark.parametrize("at", [math.inf, math.nan, 1e300, time.time() * 1000])
def test_an_at_that_never_comes_is_refused(config, redis_client, at):
    # The last one is milliseconds given as seconds: the year 57000 or so.
    with pytest.raises(JobArgumentError, match="'at' must be epoch seconds before the year"):
        Client().push({"class": "X", "args": [], "at": at})
    with pytest.raises(JobArgumentError, match="'at' must be epoch seconds before the year"):
        Client().push_bulk({"class": "X", "args": [[1], [2]], "at": [time.time() + 60, at]})
    with pytest.raises(JobArgumentError, match="'at' must be epoch seconds before the year"):
        Client().push_bulk({"class": "X", "args": [[1]], "at": at})
    with pytest.raises(JobArgumentError, match="a schedule"):
        record.set(wait_until=at)
    assert redis_client.dbsize() == 0


def test_far_but_real_times_still_schedule(config, redis_client):
    when = datetime(9999, 12, 31, tzinfo=UTC)
    record.perform_at(when, 1)
    record.set(wait=timedelta(days=365 * 30)).perform_async(2)
    scores = [score for _, score in redis_client.zrange(keys.SCHEDULE, 0, -1, withscores=True)]
    assert len(scores) == 2 and max(scores) == when.timestamp() <= MAX_AT
