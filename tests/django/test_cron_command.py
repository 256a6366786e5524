"""Periodic jobs from Django: the WURK keys, `manage.py check`, a worker refusing a bad
loop, and `manage.py wurk_cron list|pause|unpause|fire|history`."""

import io
import re

import pytest
from django.core import checks
from django.core.management import CommandError, call_command
from django.test import override_settings

from tests.core.jobs import record
from tests.support.redis_server import free_port
from wurk_django import conf
from wurk_django.core import keys
from wurk_django.core.config import set_default_config
from wurk_django.core.cron import configured_entries, register
from wurk_django.core.cron_entry import CronEntry
from wurk_django.core.payload import loads
from wurk_django.core.redis import close_connections, connection_for

LOOPS = [{"cron": "*/5 * * * *", "task": "tests.core.jobs.record", "args": ["tick"],
          "queue": "cron"},
         {"cron": "0 3 * * *", "task": "Reports::Nightly", "tz": "Europe/Berlin"}]


@pytest.fixture(autouse=True)
def fresh_config():
    set_default_config(None)
    yield
    set_default_config(None)
    close_connections()


def wurk_cron(*args) -> str:
    out = io.StringIO()
    call_command("wurk_cron", *args, stdout=out)
    return out.getvalue()


def wurk_checks():
    return [m for m in checks.run_checks(tags=["wurk"]) if m.id.startswith("wurk.")]


@override_settings(WURK={"CRON": LOOPS, "CRON_TZ": "Asia/Tokyo", "CRON_TICK_SECONDS": 1,
                         "LEADER_TTL_SECONDS": 3, "LEADER_RENEW_SECONDS": 1,
                         "LEADER_RETRY_SECONDS": 2})
def test_the_wurk_keys_reach_the_config():
    config = conf.build_config()
    assert config.cron_entries == tuple(LOOPS) and config.cron_tz == "Asia/Tokyo"
    assert (config.cron_tick_s, config.leader_ttl_s, config.leader_renew_s,
            config.leader_retry_s) == (1, 3, 1, 2)
    assert wurk_checks() == []


@pytest.mark.parametrize("entry,text", [
    ({"cron": "*/5 * * *", "task": "a.b"}, "4 fields"),
    ({"cron": "0 0 * * MON", "task": "a.b"}, "only numbers"),
    ({"cron": "* * * * *", "task": "tests.core.jobs.nope"}, "no task named"),
    ({"cron": "* * * * *", "task": "X", "tz": "Europe/Atlantis"}, "unknown time zone"),
    ("* * * * *", "must be a dict"),
])
def test_a_bad_loop_fails_the_check_naming_its_entry(entry, text):
    with override_settings(WURK={"CRON": [LOOPS[0], entry]}):
        [message] = wurk_checks()
    assert message.id == "wurk.E005" and message.msg.startswith("WURK['CRON'][1]")
    assert text in message.msg and message.hint


def test_a_bad_loop_stops_the_worker_before_it_starts():
    with override_settings(WURK={"CRON": [{"cron": "70 * * * *", "task": "Hourly"}]}):
        with pytest.raises(CommandError, match=r"WURK\['CRON'\]\[0\] \(Hourly\).*not a valid"):
            call_command("wurk_worker")


def test_wurk_cron_lists_pauses_fires_and_shows_history(redis_client):
    assert wurk_cron("list").strip() == "No periodic jobs are registered."
    with override_settings(WURK={"CRON": LOOPS}):
        config = conf.build_config()
        entries = configured_entries(config)
        register(connection_for(config), entries)
        listing = wurk_cron("list")
        lid = next(e.lid for e in entries if e.klass == "tests.core.jobs.record")
        nightly = next(e.lid for e in entries if e.klass == "Reports::Nightly")
        lines = listing.splitlines()
        assert "NEXT FIRE (LOOP TZ)" in lines[0] and "NEXT FIRE (UTC)" in lines[0]
        row = next(line for line in lines if nightly in line)
        assert re.search(r"03:00:00 Europe/Berlin  \S+ 0[12]:00:00 UTC", row)
        assert "Paused" in wurk_cron("pause", lid)
        assert re.search(rf"{lid} .* paused", wurk_cron("list"))
        assert "Unpaused" in wurk_cron("unpause", lid)
        assert "has not fired yet" in wurk_cron("history", lid)
        fired = wurk_cron("fire", lid)
        [job] = [loads(raw) for raw in redis_client.lrange(keys.queue("cron"), 0, -1)]
        assert job["jid"] in fired and job["args"] == ["tick"]
        assert job["class"] == "tests.core.jobs.record"
        history = wurk_cron("history", lid)
        assert "FIRED (UTC)" in history and job["jid"] in history
        with pytest.raises(CommandError, match="no loop 'nope'"):
            wurk_cron("pause", "nope")
        with pytest.raises(CommandError, match="needs a loop id"):
            wurk_cron("fire")


def test_the_list_table_shows_next_fire_in_the_loop_zone_and_utc(redis_client):
    entry = CronEntry("0 9 * * *", "CronProbe", tz="Asia/Tokyo")
    register(connection_for(conf.build_config()), [entry])
    redis_client.hset(keys.loop(entry.lid), "nf", "1699920000")  # 2023-11-14 00:00 UTC
    header, row = wurk_cron("list").splitlines()
    assert "NEXT FIRE (LOOP TZ)" in header and "NEXT FIRE (UTC)" in header
    assert entry.lid in row and "2023-11-14 09:00:00 Asia/Tokyo" in row
    assert "2023-11-14 00:00:00 UTC" in row


def test_wurk_cron_reports_an_unreachable_redis(monkeypatch):
    monkeypatch.setenv("WURK_REDIS_URL", f"redis://127.0.0.1:{free_port()}/0")
    with pytest.raises(CommandError, match="wurk_cron: "):
        wurk_cron("list")


def test_an_entry_may_name_the_task_object_itself():
    with override_settings(WURK={"CRON": [{"cron": "@hourly", "task": record}]}):
        [entry] = [e for e in configured_entries(conf.build_config()) if e.schedule == "@hourly"]
        assert wurk_checks() == []
    assert entry.klass == "tests.core.jobs.record"
