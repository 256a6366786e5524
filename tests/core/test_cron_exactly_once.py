"""Exactly-once cron under leader churn: three real `wurk_worker` processes, the leader
SIGKILLed in every 5-second slot for 30 s and replaced; every slot fires exactly once
(no slot is late enough for the 90 s missed-tick rule to skip it)."""

import collections
import re
import signal
import sys
import time

import pytest

from tests.cron_settings import PROBE_QUEUE
from tests.support.workers import ROOT, wait_until
from wurk_django.core import keys
from wurk_django.core.cron import occurrence_jid
from wurk_django.core.payload import loads

pytestmark = pytest.mark.slow

MANAGE = [sys.executable, str(ROOT / "manage.py"), "wurk_worker"]
ENV = {"DJANGO_SETTINGS_MODULE": "tests.cron_settings"}
SLOT_S = 5
WINDOW_S = 30
KILL_EVERY_S = 5  # one leader killed in each slot
WORKERS = 3
MISSED = re.compile(r"\[cron\] missed tick .* expected_at=(\d+) fired_at=\d+ .* before (\d+)")


def pause_until(epoch: float) -> None:
    """Pace the scenario (not an assertion): the kills come on a fixed schedule."""
    time.sleep(max(epoch - time.time(), 0))


def leader_pid(redis_client, workers: dict) -> int:
    """The pid in `dear-leader`, once it names a live worker (not one just killed)."""
    def live_leader():
        value = redis_client.get(keys.LEADER)
        pid = value and int(value.decode().split(":")[-2])
        return pid if pid in workers and workers[pid].process.poll() is None else None
    return wait_until(live_leader, 20, 0.05, "a live leader")


def test_each_slot_fires_exactly_once_while_the_leader_is_killed(start_worker, redis_client):
    def start():
        worker = start_worker("-c", "1", require=None, command=MANAGE, env=ENV)
        workers[worker.pid] = worker

    workers: dict = {}
    for _ in range(WORKERS):
        start()
    probe = keys.queue(PROBE_QUEUE)
    wait_until(lambda: redis_client.llen(probe), 30, 0.1, "the loop's first fire")
    [lid] = [m.decode() for m in redis_client.smembers(keys.PERIODIC)]
    window_start = (int(time.time()) // SLOT_S + 1) * SLOT_S
    window_end = window_start + WINDOW_S
    killed = []
    for kill in range(WINDOW_S // KILL_EVERY_S):
        # Mid-interval: a kill between a claim and its push loses that occurrence on
        # purpose (a miss is tolerable, a duplicate is not); that is not what we count.
        pause_until(window_start + kill * KILL_EVERY_S + SLOT_S / 2)
        pid = leader_pid(redis_client, workers)
        workers[pid].send(signal.SIGKILL)
        workers[pid].wait(10)
        killed.append(pid)
        start()
    slots = list(range(window_start, window_end + 1, SLOT_S))
    wanted = {occurrence_jid(lid, slot): slot for slot in slots}

    def skipped() -> set[int]:
        found = set()
        for worker in workers.values():
            for first, before in MISSED.findall(worker.log()):
                found |= {s for s in slots if int(first) <= s < int(before)}
        return found

    def jids() -> collections.Counter:
        return collections.Counter(loads(raw)["jid"] for raw in redis_client.lrange(probe, 0, -1))

    wait_until(lambda: set(wanted.values()) <= {wanted[j] for j in jids() if j in wanted}
               | skipped(), 30, 0.2, "every slot of the window to fire or be skipped")
    counts = jids()
    fired = {wanted[jid] for jid in counts if jid in wanted}
    late_s = max(loads(raw)["created_at"] / 1000 - wanted[loads(raw)["jid"]]
                 for raw in redis_client.lrange(probe, 0, -1) if loads(raw)["jid"] in wanted)
    duplicated = sum(n - 1 for n in counts.values())
    missing = sorted(set(slots) - fired - skipped())
    print(f"\nexactly-once: {len(slots)} slots, fired {len(fired)}, skipped "
          f"{len(skipped())}, duplicated {duplicated}, missing {missing}; "
          f"leaders killed {len(killed)}, latest fire {late_s:.1f} s after its slot")
    assert len(killed) == WINDOW_S // KILL_EVERY_S and len(set(killed)) == len(killed)
    assert duplicated == 0
    assert missing == []
    # The 90 s rule may not excuse any slot here: a slot is skipped only once it is more
    # than 90 s late, and a killed leader is replaced within seconds (its 2 s lock lapses,
    # a follower retrying every 0.5 s takes it and ticks each second), in a 30 s window.
    # So every slot of the window must have fired, not merely fired or been skipped.
    assert fired == set(slots), (f"slots that did not fire: {sorted(set(slots) - fired)}, "
                                 f"of which reported as missed ticks: {sorted(skipped())}")
    # Every push is the occurrence of a 5 s slot: nothing fired off-schedule.
    first_slot = min(slots) - 10 * SLOT_S
    every_slot = {occurrence_jid(lid, s) for s in range(first_slot, window_end + 30, SLOT_S)}
    assert set(counts) <= every_slot
