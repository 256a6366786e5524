"""Cron loops in Redis: registration and sync, the claim, the tick's rules (late slots,
lost pushes, pause), and `@wurk_task(cron=...)`. Manual operations on stored loops are the
data API's (tests/core/test_api_periodic.py)."""

import hashlib
import logging
import threading
import time

import pytest

from tests.support.workers import wait_until
from wurk_django.core import Client, Job, keys, wurk_task
from wurk_django.core.api import LoopSet
from wurk_django.core.cron import (
    CronDriver,
    configured_entries,
    entry_from_setting,
    occurrence_jid,
    register,
    sync,
    task_entries,
)
from wurk_django.core.cron_entry import CronEntry, lid_for
from wurk_django.core.errors import ConfigurationError
from wurk_django.core.leader import Leader, LeaderCheck
from wurk_django.core.payload import loads
from wurk_django.core.redis import connection_for
from wurk_django.core.registry import REGISTRY

MINUTE = 1_700_000_040  # 2023-11-14 22:14:00 UTC


def driver(config, is_leader=lambda: True, cls=CronDriver) -> CronDriver:
    connection = connection_for(config)
    return cls(config, connection, Client(config, connection), is_leader, entries=[])


def add_loop(config, schedule="* * * * *", klass="CronProbe", nf=None, tz="", **options):
    entry = CronEntry(schedule, klass, tz=tz, options=options)
    connection = connection_for(config)
    register(connection, [entry])
    if nf is not None:
        connection.client.hset(keys.loop(entry.lid), "nf", str(nf))
    return entry.lid


def queued(redis_client, queue="default") -> list[dict]:
    return [loads(raw) for raw in reversed(redis_client.lrange(keys.queue(queue), 0, -1))]


def marks(redis_client, lid) -> tuple:
    lf, nf = redis_client.hmget(keys.loop(lid), "lf", "nf")
    return (lf and int(lf)), (nf and int(nf))


# --- entries and registration ------------------------------------------------------

def test_the_lid_is_sha1_of_schedule_class_and_options_sorted_without_tz():
    entry = entry_from_setting({"cron": "*/5  * * * *", "task": "Reports::Build", "queue": "low",
                                "args": [1], "tz": "Asia/Tokyo"}, "entry 0")
    expected = hashlib.sha1(b'*/5 * * * *|Reports::Build|{"args":[1],"queue":"low"}')
    assert entry.lid == expected.hexdigest()[:16]
    assert entry.tz == "Asia/Tokyo" and "tz" not in entry.options
    paused = entry_from_setting({"cron": "*/5 * * * *", "task": "Reports::Build", "queue": "low",
                                 "args": [1], "paused": True}, "entry 0")
    assert paused.lid == lid_for("*/5 * * * *", "Reports::Build",
                                 {"args": [1], "queue": "low", "paused": True}) != entry.lid


def test_entry_options_args_and_unknown_keys():
    entry = entry_from_setting({"cron": "@daily", "task": "Nightly", "args": {"a": 1},
                                "retry": 2, "note": "kept"}, "entry 0", default_tz="UTC")
    assert entry.options == {"args": [{"a": 1}], "retry": 2, "note": "kept"}  # one argument
    assert entry.tz == "UTC" and entry.schedule == "@daily"
    assert entry_from_setting({"cron": "@daily", "task": "tests.core.jobs.record"},
                              "entry 0").klass == "tests.core.jobs.record"


@pytest.mark.parametrize("raw,message", [
    ({"cron": "61 * * * *", "task": "X"}, "not a valid cron"),
    ({"cron": "0 0 * JAN *", "task": "X"}, "only numbers"),
    ({"cron": "0 0 L * *", "task": "X"}, "only numbers"),
    ({"cron": "@reboot", "task": "X"}, "unknown alias"),
    ({"cron": "* * * * * * *", "task": "X"}, "7 fields"),
    ({"cron": "* * * *", "task": "X"}, "4 fields"),
    ({"cron": "* * * * *", "task": ""}, "must name a task"),
    ({"cron": "* * * * *", "task": "X", "tz": "Mars/Olympus"}, "unknown time zone"),
    ({"cron": "* * * * *", "task": "tests.core.jobs.no_such_task"}, "no task named"),
    ({"cron": "* * * * *", "task": "X", "args": [object()]}, "'args'"),
    ({"cron": "* * * * *", "task": "X", "expires_in": object()}, "JSON values"),
])
def test_bad_entries_are_refused_naming_the_entry(raw, message):
    with pytest.raises(ConfigurationError, match=message) as caught:
        entry_from_setting(raw, "WURK['CRON'][3] (X)")
    assert "WURK['CRON'][3]" in str(caught.value)


def test_a_bad_entry_fails_the_config_naming_it(config):
    with pytest.raises(ConfigurationError, match=r"cron entry 1 \(b\): .*field"):
        config.replace(cron_entries=[{"cron": "* * * * *", "task": "a"},
                                     {"cron": "* * * * * * *", "task": "b"}])


def test_register_writes_the_spec_layout_and_keeps_a_pause(config, redis_client):
    entry = CronEntry("*/5 * * * *", "CronProbe", tz="Europe/Berlin",
                      options={"queue": "low", "args": [1]})
    connection = connection_for(config)
    register(connection, [entry])
    assert redis_client.smembers(keys.PERIODIC) == {entry.lid.encode()}
    assert redis_client.hgetall(f"loops:{entry.lid}") == {
        b"schedule": b"*/5 * * * *", b"klass": b"CronProbe", b"tz": b"Europe/Berlin",
        b"options": b'{"queue":"low","args":[1]}', b"paused": b"0"}
    redis_client.hset(f"loops:{entry.lid}", "paused", "1")
    register(connection, [entry])
    assert redis_client.hget(f"loops:{entry.lid}", "paused") == b"1"


def test_sync_removes_loops_no_longer_configured_with_their_history(config, redis_client):
    kept, dropped = CronEntry("* * * * *", "Kept"), CronEntry("* * * * *", "Dropped")
    connection = connection_for(config)
    sync(connection, [kept, dropped])
    LoopSet(config).fire(dropped.lid)
    assert redis_client.llen(keys.loop_history(dropped.lid)) == 1
    assert sync(connection, [kept]) == [dropped.lid]
    assert redis_client.smembers(keys.PERIODIC) == {kept.lid.encode()}
    assert not redis_client.exists(keys.loop(dropped.lid), keys.loop_history(dropped.lid))


def test_config_entries_and_cron_tasks_are_registered_together(config):
    entries = configured_entries(config.replace(
        cron_tz="Europe/Berlin",
        cron_entries=[{"cron": "0 * * * *", "task": "tests.core.jobs.record", "args": [1]},
                      {"cron": "0 * * * *", "task": "tests.core.jobs.record", "args": [1]}]))
    from_config = [e for e in entries if e.klass == "tests.core.jobs.record"]
    assert len(from_config) == 1  # the same loop twice is one loop
    assert from_config[0].tz == "Europe/Berlin"


# --- @wurk_task(cron=...) ------------------------------------------------------------

@pytest.fixture
def cron_tasks():
    @wurk_task(queue="low", cron="0 4 * * *", cron_args=["nightly"], cron_tz="Asia/Tokyo")
    def nightly(kind):
        return kind

    class Hourly(Job):
        wurk_options = {"cron": "@hourly", "retry": 1}

        def perform(self):
            pass

    class NotPeriodic(Hourly):
        pass

    yield nightly, Hourly, NotPeriodic
    for task in (nightly.job_class, Hourly, NotPeriodic):
        REGISTRY.unregister(task.wire_name)


def test_cron_tasks_register_loops_and_their_options_never_reach_payloads(
        cron_tasks, config, redis_client):
    nightly, hourly, not_periodic = cron_tasks
    entries = {e.klass: e for e in task_entries()}
    assert entries[nightly.name] == CronEntry("0 4 * * *", nightly.name, tz="Asia/Tokyo",
                                              options={"args": ["nightly"]})
    assert entries[hourly.wire_name].schedule == "@hourly"
    assert not_periodic.wire_name not in entries  # the cron option is not inherited
    nightly.perform_async("manual")
    hourly.perform_async()
    # Exactly one push in each task's own queue, with its other options kept.
    low, default = queued(redis_client, "low"), queued(redis_client)
    assert (len(low), len(default)) == (1, 1), f"low: {low}, default: {default}"
    manual, hourly_job = low[0], default[0]
    assert (manual["class"], manual["args"]) == (nightly.name, ["manual"])
    assert (hourly_job["class"], hourly_job["args"], hourly_job["retry"]) == (
        hourly.wire_name, [], 1)
    for job in (manual, hourly_job):
        assert not {"cron", "cron_args", "cron_tz", "tz", "paused"} & set(job), job


def test_a_bad_cron_option_fails_with_the_loops_not_when_the_task_is_defined(config):
    # Defining the task (importing its module) must not fail every command; the loops
    # (worker start, system checks) refuse it, naming the task.
    @wurk_task(cron="99 * * * *")
    def broken():
        pass

    try:
        with pytest.raises(ConfigurationError, match=r"broken \(cron=\.\.\.\): cron: .*not a "
                                                     r"valid"):
            configured_entries(config)
    finally:
        REGISTRY.unregister(broken.name)

    @wurk_task(cron_args=[1])
    def args_only():
        pass

    try:
        with pytest.raises(ConfigurationError, match="without 'cron'"):
            task_entries()
    finally:
        REGISTRY.unregister(args_only.name)


# --- the tick ----------------------------------------------------------------------

def test_a_due_slot_fires_once_with_its_marks_history_and_jid(config, redis_client):
    lid = add_loop(config, "* * * * *", queue="cron", args=[7], retry=3, nf=MINUTE)
    cron = driver(config)
    assert cron.run_loop(lid, MINUTE + 2) == 1
    [job] = queued(redis_client, "cron")
    assert (job["class"], job["args"], job["queue"], job["retry"]) == ("CronProbe", [7], "cron", 3)
    assert job["jid"] == occurrence_jid(lid, MINUTE)
    assert marks(redis_client, lid) == (MINUTE + 2, MINUTE + 60)
    assert LoopSet(config).fetch(lid).history == [(MINUTE + 2, job["jid"])]
    assert cron.run_loop(lid, MINUTE + 3) == 0  # the next slot is not due yet
    assert len(queued(redis_client, "cron")) == 1


def test_a_new_loop_fires_if_it_matched_within_the_last_tick(config, redis_client):
    lid = add_loop(config, "* * * * *")
    cron = driver(config.replace(cron_tick_s=60))
    assert cron.run_loop(lid, MINUTE + 59) == 1
    assert queued(redis_client)[0]["jid"] == occurrence_jid(lid, MINUTE)
    other = add_loop(config, "*/5 * * * *", klass="Other")
    assert cron.run_loop(other, MINUTE + 59) == 0  # it last matched at 22:10, next at 22:15
    assert marks(redis_client, other) == (None, None)


def test_followers_read_no_loop(config, redis_client):
    add_loop(config, "* * * * * *")
    driver(config, is_leader=lambda: False).tick()
    assert queued(redis_client) == []


def test_a_slot_more_than_90_s_late_is_skipped_with_a_warning(config, redis_client, caplog):
    lid = add_loop(config, "* * * * *", nf=MINUTE - 120)
    now = MINUTE + 30
    with caplog.at_level(logging.WARNING, "wurk"):
        assert driver(config).run_loop(lid, now) == 2
    [warning] = [r.getMessage() for r in caplog.records if "[cron] missed tick" in r.getMessage()]
    assert f"lid={lid} klass=CronProbe expected_at={MINUTE - 120} fired_at={now} drift=150s" \
        in warning
    # Not backfilled: the slots within 90 s (MINUTE - 60, MINUTE) fire, older ones do not.
    assert [j["jid"] for j in queued(redis_client)] == [occurrence_jid(lid, MINUTE - 60),
                                                       occurrence_jid(lid, MINUTE)]
    assert marks(redis_client, lid) == (now, MINUTE + 60)


def test_several_slots_behind_within_90_s_each_fire_in_order(config, redis_client):
    lid = add_loop(config, "* * * * * */5", nf=MINUTE - 20)
    assert driver(config).run_loop(lid, MINUTE + 2) == 5
    assert [j["jid"] for j in queued(redis_client)] == [
        occurrence_jid(lid, MINUTE + offset) for offset in (-20, -15, -10, -5, 0)]
    assert marks(redis_client, lid) == (MINUTE + 2, MINUTE + 5)


def test_a_push_failing_after_the_claim_loses_only_that_occurrence(config, redis_client, caplog):
    class Down:
        def call(self, klass, job, queue, redis, next_):
            raise RuntimeError("queue unavailable")

    broken = config.replace()
    broken.client_middleware.add(Down)
    reported = []
    broken.error_handlers.append(lambda exc, ctx, cfg: reported.append(ctx["context"]))
    lid = add_loop(config, "* * * * *", nf=MINUTE)
    with caplog.at_level(logging.WARNING, "wurk"):
        with pytest.raises(RuntimeError):
            driver(broken).run_loop(lid, MINUTE + 1)
    assert f"[cron] fire lost lid={lid} klass=CronProbe mark already advanced, occurrence " \
           f"skipped: RuntimeError: queue unavailable" in caplog.text
    assert queued(redis_client) == [] and marks(redis_client, lid) == (MINUTE + 1, MINUTE + 60)
    assert driver(config).run_loop(lid, MINUTE + 61) == 1  # the next slot fires as usual
    # Inside a tick the error goes to the handlers and the other loops still run.
    redis_client.hset(keys.loop(lid), "nf", str(int(time.time()) - 1))
    driver(broken).tick()
    assert reported == [f"cron loop {lid}"]


def test_a_schedule_that_never_matches_fires_nothing(config, redis_client):
    lid = add_loop(config, "0 0 30 2 *")
    assert driver(config).run_loop(lid, MINUTE) == 0
    assert marks(redis_client, lid) == (None, None)


# --- the claim ------------------------------------------------------------------------

def test_the_claim_is_a_compare_and_swap_on_the_next_fire_mark(config, redis_client):
    claim = connection_for(config).script("cron_claim")
    lid = add_loop(config, nf=100)
    key = keys.loop(lid)
    assert claim(keys=[key], args=["99", "150", "200"]) == 0  # another slot: refused
    assert claim(keys=[key], args=["100", "150", "200"]) == 1
    assert marks(redis_client, lid) == (150, 200)
    assert claim(keys=[key], args=["100", "151", "200"]) == 0  # taken already
    assert claim(keys=[key], args=["200", "250", ""]) == 1  # never again: nf cleared
    assert marks(redis_client, lid) == (250, None)
    assert claim(keys=[key], args=["200", "251", "300"]) == 0  # lf is past the slot
    assert claim(keys=[key], args=["260", "261", "300"]) == 1
    assert claim(keys=["loops:unregistered"], args=["1", "2", "3"]) == 0
    assert not redis_client.exists("loops:unregistered")


def test_a_follower_with_a_stale_leader_answer_races_the_new_leader_and_loses(
        config, redis_client):
    """Driven step by step: the stale process reads the slot, the new leader's whole
    tick runs, then the stale process claims; nothing is timed."""
    connection = connection_for(config)
    old = Leader(config, connection, "host:1:aaaaaaaaaaaa", enabled=True)
    new = Leader(config, connection, "host:2:bbbbbbbbbbbb", enabled=True)
    assert old.campaign()
    old_check = LeaderCheck(old, clock=lambda: 1000.0)  # a clock that never moves
    assert old_check() is True
    redis_client.delete(keys.LEADER)  # the old leader stalled past its TTL ...
    assert new.campaign()  # ... and a follower took over
    assert old_check() is True  # stale, as it may be for up to 5 s
    due = int(time.time()) - 1
    lid = add_loop(config, "* * * * * *", nf=due)
    new_leader = driver(config, is_leader=new.check())
    outcomes = []

    class Stale(CronDriver):
        def claim(self, lid, token, now, future):
            if not outcomes:
                new_leader.tick()  # the new leader's whole tick, between read and claim
            won = super().claim(lid, token, now, future)
            outcomes.append((token, won))
            return won

    stale = driver(config, is_leader=old_check, cls=Stale)
    stale.tick()
    assert outcomes[0] == (str(due), False)  # lost the claim for the slot it read
    jids = [job["jid"] for job in queued(redis_client)]
    assert jids.count(occurrence_jid(lid, due)) == 1 and len(jids) == len(set(jids))


# --- the thread ----------------------------------------------------------------------

def test_a_stopped_cron_thread_that_would_not_join_is_not_doubled_by_a_restart(
        config, redis_client):
    entered, release = threading.Event(), threading.Event()

    class Wedge:  # a push that hangs (a stuck middleware, a network stall)
        def call(self, klass, job, queue, redis, next_):
            entered.set()
            release.wait(10)
            return next_()

    wedged = config.replace(cron_tick_s=0.05)
    wedged.client_middleware.add(Wedge)
    add_loop(config, "* * * * * *")
    cron = driver(wedged)
    cron.start()
    try:
        assert entered.wait(5)
        assert cron.stop(timeout_s=0.1) is False
        assert cron.start() is False
        assert [t.name for t in threading.enumerate()].count("wurk-cron") == 1
        release.set()
        wait_until(lambda: not cron.running, 5, message="the wedged tick to end")
        pushed = len(queued(redis_client))
        entered.clear()
        assert cron.start() is True
        wait_until(lambda: len(queued(redis_client)) > pushed, 5, message="ticks again")
        assert [t.name for t in threading.enumerate()].count("wurk-cron") == 1
    finally:
        release.set()
        cron.stop()
    jids = [job["jid"] for job in queued(redis_client)]
    assert len(jids) == len(set(jids))
