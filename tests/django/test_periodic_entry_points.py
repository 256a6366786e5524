"""`manage.py wurk_cron` and the dashboard's periodic endpoints are two doors to one data API
(LoopSet): what one does the other shows, and a bad loop costs both the same one loop."""

import io
import re
import time
from datetime import UTC, datetime

import pytest
from django.core.management import call_command

from tests.django.dashboard_helpers import Api, ok, users_fixture  # noqa: F401
from wurk_django.core import keys
from wurk_django.core.cron import register
from wurk_django.core.cron_entry import CronEntry
from wurk_django.core.payload import loads
from wurk_django.core.redis import connection_for

pytestmark = pytest.mark.django_db


def wurk_cron(*args) -> str:
    out = io.StringIO()
    call_command("wurk_cron", *args, stdout=out)
    return out.getvalue()


def listed_rows(text: str) -> dict[str, str]:
    """`wurk_cron list` rows by lid, without the header and the notes after the table."""
    rows = text.splitlines()[1:]
    return {row.split()[0]: row for row in rows if not row.startswith("Left out")}


@pytest.fixture
def root(users):
    return Api(users["superuser"])


@pytest.fixture
def lid(config):
    entry = CronEntry("*/5 * * * *", "app.Report", tz="Europe/Paris", options={"queue": "cron"})
    register(connection_for(config), [entry])
    return entry.lid


def test_a_fire_through_either_door_is_the_last_run_and_in_the_history(root, lid,
                                                                        redis_client):
    fired = wurk_cron("fire", lid)
    detail = ok(root.get(f"periodic/{lid}"))
    [first] = detail["history"]
    assert first["jid"] in fired and detail["last_fired_at_ms"] == first["fired_at_ms"]

    jid = ok(root.post(f"periodic/{lid}/run"))["jid"]
    newest, older = wurk_cron("history", lid).splitlines()[1:]
    assert jid in newest and first["jid"] in older
    last_fired = int(redis_client.hget(keys.loop(lid), "lf"))
    assert f"{datetime.fromtimestamp(last_fired, UTC):%Y-%m-%d %H:%M:%S} UTC" in (
        listed_rows(wurk_cron("list"))[lid])
    pushed = [loads(raw)["jid"] for raw in redis_client.lrange(keys.queue("cron"), 0, -1)]
    assert sorted(pushed) == sorted([first["jid"], jid])


def test_a_pause_through_either_door_is_seen_by_the_other(root, lid):
    ok(root.post(f"periodic/{lid}/pause"))
    assert re.search(r"\bpaused\b", listed_rows(wurk_cron("list"))[lid])
    wurk_cron("unpause", lid)
    [item] = ok(root.get("periodic"))["items"]
    assert item["paused"] is False and item["next_fire_at_ms"] > time.time() * 1000
    wurk_cron("pause", lid)
    detail = ok(root.get(f"periodic/{lid}"))
    assert detail["paused"] is True and detail["next_fire_at_ms"] is None
    ok(root.post(f"periodic/{lid}/resume"))
    assert re.search(r"\bactive\b", listed_rows(wurk_cron("list"))[lid])


def test_a_bad_loop_costs_both_doors_the_same_one_loop(root, lid, redis_client):
    redis_client.sadd(keys.PERIODIC, "bad", "ruby")
    redis_client.set(keys.loop("bad"), "x")  # another tool's data under a loop's key
    # A loop another implementation stored, with a month name Wurk's parser refuses.
    redis_client.hset(keys.loop("ruby"), mapping={"schedule": "0 0 * JAN *",
                                                  "klass": "Ruby::Job", "paused": "0"})
    page = ok(root.get("periodic"))
    text = wurk_cron("list")
    rows = listed_rows(text)
    assert [item["lid"] for item in page["items"]] == list(rows) == ["ruby", lid]
    ruby = next(item for item in page["items"] if item["lid"] == "ruby")
    assert ruby["next_fire_at_ms"] is None
    assert re.search(r"\bactive\s+-\s+-\s+-$", rows["ruby"])
    [problem] = page["problems"]
    assert keys.loop("bad") in problem and f"Left out: {problem}" in text
