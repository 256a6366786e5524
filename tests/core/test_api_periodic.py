"""The data API's cron loops (LoopSet): list, fetch with history, pause, unpause and fire
now, each on the stored loop the engine's tick reads, and one bad loop hash costing one loop."""

import json

import pytest

from tests.core.test_cron import MINUTE, add_loop, driver, marks, queued
from wurk_django.core import keys
from wurk_django.core.api import LoopSet
from wurk_django.core.errors import WrongTypeError
from wurk_django.core.payload import dumps


def test_pause_skips_and_unpause_resumes_from_the_next_slot(config, redis_client):
    loops = LoopSet(config)
    lid = add_loop(config, "* * * * *", nf=MINUTE)
    assert loops.pause(lid) is True
    assert driver(config).run_loop(lid, MINUTE + 1) == 0
    assert loops.fetch(lid).paused and loops.fetch(lid).upcoming is None
    assert loops.unpause(lid) is True
    loop = loops.fetch(lid)
    assert not loop.paused and loop.next_fire_at > MINUTE + 60  # computed from now
    assert loops.pause("nope") is False
    assert loops.unpause("nope") is False
    assert not redis_client.exists(keys.loop("nope"))


def test_manual_fire_skips_gate_and_claim_and_moves_the_marks(config, redis_client):
    loops = LoopSet(config)
    lid = add_loop(config, "0 0 1 1 *", queue="cron", args=["a"], nf=MINUTE)
    loops.pause(lid)
    jid = loops.fire(lid)
    [job] = queued(redis_client, "cron")
    assert job["jid"] == jid and job["args"] == ["a"]
    lf, nf = marks(redis_client, lid)
    assert nf > lf > MINUTE and loops.fetch(lid).history == [(lf, jid)]
    assert loops.fetch(lid).last_fired_at == lf
    assert loops.fire("unknown") is None


def test_history_keeps_the_last_25_fires_newest_first(config, redis_client):
    loops = LoopSet(config)
    lid = add_loop(config)
    jids = [loops.fire(lid) for _ in range(30)]
    history = loops.fetch(lid).history
    assert [jid for _, jid in history] == jids[::-1][:25]
    assert redis_client.llen(keys.loop_history(lid)) == 25
    assert json.loads(redis_client.lindex(keys.loop_history(lid), 0))[1] == jids[-1]


def test_unreadable_history_entries_are_skipped(config, redis_client):
    lid = add_loop(config)
    redis_client.lpush(keys.loop_history(lid), dumps([MINUTE, "j1"]), "garbage",
                       dumps([1, 2, 3]), dumps([MINUTE + 60, "j2"]))
    assert LoopSet(config).fetch(lid).history == [(MINUTE + 60, "j2"), (MINUTE, "j1")]


def test_a_loop_hash_of_the_wrong_type_costs_that_loop_only(config, redis_client):
    lid = add_loop(config, "*/5 * * * *", klass="Good")
    redis_client.sadd(keys.PERIODIC, "bad")
    redis_client.set(keys.loop("bad"), "x")
    loops = LoopSet(config)
    assert [loop.lid for loop in loops] == [lid]
    [problem] = loops.problems
    assert keys.loop("bad") in problem and "string" in problem
    for act in (loops.fetch, loops.pause, loops.unpause, loops.fire):
        with pytest.raises(WrongTypeError, match=keys.loop("bad")):
            act("bad")
    assert queued(redis_client) == []


def test_a_schedule_this_side_cannot_parse_shows_no_next_fire(config, redis_client):
    # A loop another implementation stored, with a month name Wurk's parser refuses.
    redis_client.sadd(keys.PERIODIC, "ruby")
    redis_client.hset(keys.loop("ruby"), mapping={"schedule": "0 0 * JAN *",
                                                  "klass": "Ruby::Job", "paused": "0"})
    [loop] = LoopSet(config)
    assert (loop.lid, loop.upcoming) == ("ruby", None)
