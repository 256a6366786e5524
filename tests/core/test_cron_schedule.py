"""Cron expressions and time zones: aliases, seconds, and fire times across DST changes,
computed for chosen instants (nothing waits for a clock)."""

import logging
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest
from croniter import croniter

from wurk_django.core import keys
from wurk_django.core.client import Client
from wurk_django.core.cron import CronDriver, CronEntry, register
from wurk_django.core.cron_schedule import (
    CronSchedule,
    normalize_expression,
    schedule_for,
    zone_for,
)
from wurk_django.core.errors import ConfigurationError
from wurk_django.core.redis import connection_for

BERLIN = ZoneInfo("Europe/Berlin")
NEW_YORK = ZoneInfo("America/New_York")


def at(zone, *fields, fold=0) -> int:
    return int(datetime(*fields, tzinfo=zone, fold=fold).timestamp())


def local(epoch, zone) -> str:
    return datetime.fromtimestamp(epoch, zone).strftime("%Y-%m-%d %H:%M:%S %Z")


def fires(schedule: CronSchedule, after: int, count: int) -> list[str]:
    found = []
    for _ in range(count):
        after = schedule.next_after(after)
        found.append(local(after, schedule.zone))
    return found


@pytest.mark.parametrize("expression,normal", [
    ("@daily", "0 0 * * *"), ("@HOURLY", "0 * * * *"), ("@annually", "0 0 1 1 *"),
    ("*/5  *  * * *", "*/5 * * * *"), ("* * * * * */5", "* * * * * */5"),
    ("5/15 1-3 * * 7", "5/15 1-3 * * 7"),
])
def test_expressions_are_normalized(expression, normal):
    assert normalize_expression(expression) == normal


def test_a_sixth_field_last_gives_seconds_and_steps_start_at_their_base():
    assert fires(CronSchedule("* * * * * */5"), at(UTC, 2024, 1, 1, 0, 0, 1), 2) == [
        "2024-01-01 00:00:05 UTC", "2024-01-01 00:00:10 UTC"]
    minutes = fires(CronSchedule("5/15 * * * *"), at(UTC, 2024, 1, 1), 4)
    assert [m[14:16] for m in minutes] == ["05", "20", "35", "50"]
    sundays = fires(CronSchedule("0 0 * * 7"), at(UTC, 2024, 1, 1), 1)  # 7 = 0
    assert sundays == ["2024-01-07 00:00:00 UTC"]


def test_a_schedule_that_never_matches_has_no_next_fire():
    assert CronSchedule("0 0 30 2 *").next_after(at(UTC, 2024, 1, 1)) is None


def test_spring_forward_a_skipped_local_time_never_fires():
    # Berlin, 2024-03-31: 02:00 CET jumps to 03:00 CEST; 02:30 does not exist that day.
    schedule = CronSchedule("30 2 * * *", BERLIN)
    assert fires(schedule, at(BERLIN, 2024, 3, 30, 12), 2) == [
        "2024-04-01 02:30:00 CEST", "2024-04-02 02:30:00 CEST"]
    hourly = CronSchedule("30 * * * *", BERLIN)
    assert fires(hourly, at(BERLIN, 2024, 3, 31, 0, 45), 3) == [
        "2024-03-31 01:30:00 CET", "2024-03-31 03:30:00 CEST", "2024-03-31 04:30:00 CEST"]


def test_fall_back_a_fixed_hour_fires_once_an_every_hour_schedule_twice():
    # Berlin, 2024-10-27: 03:00 CEST goes back to 02:00 CET; 02:30 happens twice.
    daily = CronSchedule("30 2 * * *", BERLIN)
    assert fires(daily, at(BERLIN, 2024, 10, 26, 12), 2) == [
        "2024-10-27 02:30:00 CEST", "2024-10-28 02:30:00 CET"]
    # Asked from inside the repeated hour (second pass), the daily one waits a day.
    assert fires(daily, at(BERLIN, 2024, 10, 27, 2, 10, fold=1), 1) == ["2024-10-28 02:30:00 CET"]
    hourly = CronSchedule("30 * * * *", BERLIN)
    assert fires(hourly, at(BERLIN, 2024, 10, 27, 1, 45), 3) == [
        "2024-10-27 02:30:00 CEST", "2024-10-27 02:30:00 CET", "2024-10-27 03:30:00 CET"]
    # Late in the first pass, the next fire is early in the second one.
    every_20 = CronSchedule("*/20 * * * *", NEW_YORK)
    assert fires(every_20, at(NEW_YORK, 2024, 11, 3, 1, 50), 2) == [
        "2024-11-03 01:00:00 EST", "2024-11-03 01:20:00 EST"]


def brute_force(schedule: CronSchedule, after: int) -> int:
    """The first whole minute after `after` whose wall time matches, by the same DST
    rules, found by trying every minute."""
    epoch = (after // 60 + 1) * 60
    while True:
        wall = datetime.fromtimestamp(epoch, schedule.zone)
        repeated = wall.replace(fold=0).timestamp() != wall.replace(fold=1).timestamp()
        if croniter.match(schedule.expression, wall.replace(tzinfo=None)) and not (
                repeated and wall.fold == 1 and not schedule.every_hour):
            return epoch
        epoch += 60


@pytest.mark.parametrize("zone,day", [
    ("America/New_York", (2024, 3, 10)), ("America/New_York", (2024, 11, 3)),
    ("Australia/Lord_Howe", (2024, 4, 7)),  # a 30-minute change
])
@pytest.mark.parametrize("expression", ["30 1 * * *", "*/20 * * * *", "15,45 1-3 * * *"])
def test_fire_times_match_a_minute_by_minute_search_around_a_change(zone, day, expression):
    schedule = CronSchedule(expression, ZoneInfo(zone))
    start = at(ZoneInfo(zone), *day) - 3600
    for after in range(start, start + 5 * 3600, 1931):
        expected = brute_force(schedule, after)
        assert schedule.next_after(after) == expected, local(after, schedule.zone)


def test_a_loop_is_driven_across_a_fall_back_firing_its_slot_once(config, redis_client):
    entry = CronEntry("30 2 * * *", "CronProbe", tz="Europe/Berlin")
    connection = connection_for(config)
    register(connection, [entry])
    first = at(BERLIN, 2024, 10, 27, 2, 30)
    repeated = at(BERLIN, 2024, 10, 27, 2, 30, fold=1)
    redis_client.hset(keys.loop(entry.lid), "nf", first)
    cron = CronDriver(config, connection, Client(config, connection), lambda: True, entries=[])
    assert cron.run_loop(entry.lid, first + 5) == 1
    assert int(redis_client.hget(keys.loop(entry.lid), "nf")) == at(BERLIN, 2024, 10, 28, 2, 30)
    assert cron.run_loop(entry.lid, repeated + 5) == 0
    assert redis_client.llen(keys.queue("default")) == 1


def test_a_zone_unknown_here_warns_once_and_runs_as_utc(caplog):
    with caplog.at_level(logging.WARNING, "wurk"):
        first = schedule_for("0 9 * * *", "Nowhere/Atlantis")
        second = schedule_for("0 10 * * *", "Nowhere/Atlantis")
    assert first.zone is UTC and second.zone is UTC
    assert caplog.text.count("unknown time zone 'Nowhere/Atlantis'") == 1
    with pytest.raises(ConfigurationError, match="unknown time zone"):
        zone_for("Nowhere/Atlantis")  # configured entries are strict
