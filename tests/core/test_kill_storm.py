"""Capacity under faults: `-p 2` children SIGKILLed every 1.5 s keep a child serving and
drain a queue within twice the unharmed time, losing no job.

Every drain runs in the same test on the same supervisor (unharmed, storm, unharmed
again), so a loaded machine slows them all: the assertions are on the ratio of drain
times and on a share of samples, never on seconds. The jobs mostly sleep, so CPU load
from other tests stretches restarts (fork, boot, first heartbeat: 0.05-0.2 s with the
load average at 7 on 2 cores) far less than the 1.5 s between kills, and the 2x target
leaves room for that; the slower unharmed drain is the baseline, so load that starts
mid-test does not count against the storm. The share counts samples, which a busy
sampler takes fewer of but not less fairly.
"""

import math
import os
import signal
import time
from dataclasses import dataclass, field

import pytest

from tests.core import jobs
from tests.core.test_no_job_lost import extra_runs_outside, settled
from tests.core.test_supervisor import FAST, swarm, wait_for_children  # noqa: F401
from tests.support.workers import children, wait_until
from wurk_django.core import keys

pytestmark = pytest.mark.slow

JOBS = 5_000
THREADS = 10
WORK_MS = 40  # 5k x 40 ms over 2 x 10 threads: about 10 s at full strength
KILL_EVERY_S = 1.5
SAMPLE_EVERY_S = 0.05
MIN_SERVING_SHARE = 0.9
MAX_SLOWDOWN = 2.0


@dataclass
class Drain:
    """One drain of JOBS jobs, sampled: how long, how often a child served, what died."""

    seconds: float = math.inf
    samples: int = 0
    serving: int = 0  # samples in which at least one child was alive and registered
    kills: list = field(default_factory=list)
    childless_kill_ticks: int = 0  # kill ticks that found no live child at all
    refills: list = field(default_factory=list)  # seconds from a kill to 2 serving again
    progress: list = field(default_factory=list)  # (done, queued, held privately) per kill

    @property
    def share(self) -> float:
        return self.serving / max(self.samples, 1)


def registered(redis_client) -> set[int]:
    """Pids of processes whose identity hash still has its `info` (written by a heartbeat)."""
    members = list(redis_client.smembers(keys.PROCESSES))
    pipe = redis_client.pipeline(transaction=False)
    for member in members:
        pipe.hexists(member, "info")
    return {int(m.decode().split(":")[1]) for m, has in zip(members, pipe.execute()) if has}


def where(redis_client, done: int) -> tuple[int, int, int]:
    """Jobs done, waiting in the queue, and held in private lists (running or unacked)."""
    held = sum(redis_client.llen(key) for key in redis_client.scan_iter(match="queue:default|*"))
    return done, redis_client.llen("queue:default"), held


def drain(redis_client, parent: int, give_up_s: float, kill_every_s: float | None = None):
    """Push JOBS jobs and sample the real children until all ran (or `give_up_s`).

    Serving means alive (not a zombie) and registered: a child registers in the same
    call that starts its fetching threads, and a SIGKILLed one stops being alive at
    once, while its identity hash lingers for a minute.
    """
    redis_client.delete("test:jids", "test:runs", "test:ran")
    run, born = Drain(), {}
    began = time.monotonic()
    jobs.Tally.perform_bulk([[WORK_MS]] * JOBS)
    next_kill = began + kill_every_s if kill_every_s else math.inf
    killed_at = None
    while (done := redis_client.scard("test:jids")) < JOBS:
        now = time.monotonic()
        if now - began > give_up_s:
            return run
        live = children(parent)
        for pid in live:
            born.setdefault(pid, now)
        serving = live & registered(redis_client)
        run.samples += 1
        run.serving += bool(serving)
        if killed_at is not None and len(serving) == 2:
            run.refills.append(now - killed_at)
            killed_at = None
        if now >= next_kill:
            if live:
                victim = min(live, key=born.get)  # the oldest: the one surely serving
                os.kill(victim, signal.SIGKILL)
                run.kills.append(victim)
                run.progress.append(where(redis_client, done))
                killed_at = killed_at or now
            else:
                run.childless_kill_ticks += 1
            next_kill = max(next_kill + kill_every_s, now + kill_every_s / 2)
        time.sleep(max(0.0, now + SAMPLE_EVERY_S - time.monotonic()))  # the sampling pace
    run.seconds = time.monotonic() - began
    return run


def describe(before: Drain, storm: Drain, after: Drain | None) -> str:
    unharmed = max(before.seconds, after.seconds if after else 0)
    return (f"unharmed {before.seconds:.1f} s before the storm, "
            f"{after.seconds if after else math.nan:.1f} s after; storm {storm.seconds:.1f} s "
            f"({storm.seconds / unharmed:.2f}x), {len(storm.kills)} SIGKILLs, "
            f"{storm.childless_kill_ticks} kill ticks with no live child, a child serving in "
            f"{storm.share:.1%} of {storm.samples} samples; back to 2 serving children "
            f"{sorted(round(s, 2) for s in storm.refills)} s after a kill; jobs (done, queued, "
            f"held) at each kill {storm.progress}")


def test_a_kill_storm_keeps_a_child_serving_and_drains_within_twice_the_time(
        config, swarm, redis_client):  # noqa: F811 - the fixture imported above
    worker = swarm("-p", "2", "-c", str(THREADS), "-t", "5", *FAST)
    wait_for_children(redis_client, worker.pid, 2)
    before = drain(redis_client, worker.pid, give_up_s=120)
    assert before.seconds < math.inf, "the unharmed drain did not finish"
    wait_until(lambda: settled(redis_client), 20, 0.1, "every ack of the unharmed drain")
    storm = drain(redis_client, worker.pid, give_up_s=3 * MAX_SLOWDOWN * before.seconds,
                  kill_every_s=KILL_EVERY_S)
    print(f"\nkill storm: {describe(before, storm, None)}")
    assert len(storm.kills) >= 3, "the storm ended before it began"
    assert storm.share >= MIN_SERVING_SHARE
    assert storm.seconds < math.inf, f"{redis_client.scard('test:jids')} of {JOBS} done"
    wait_until(lambda: settled(redis_client), 30, 0.1, "queues and private lists to empty")
    runs = int(redis_client.get("test:runs"))
    print(f"kill storm: {JOBS - redis_client.scard('test:jids')} lost, "
          f"{runs - JOBS} duplicates")
    assert redis_client.scard("test:jids") == JOBS  # none lost
    assert redis_client.zcard(keys.DEAD) == 0
    assert redis_client.zcard(keys.RETRY) == 0  # no run failed: a retry would be the tail
    # A job ran twice only because the process that ran it first was killed before its
    # acknowledgement went out.
    assert extra_runs_outside(redis_client, set(storm.kills)) == {}
    # The unharmed time once more: of the two, the slower is the baseline, so load that
    # builds up during the test is not charged to the storm.
    after = drain(redis_client, worker.pid, give_up_s=120)
    print(f"kill storm: {describe(before, storm, after)}")
    assert storm.seconds <= MAX_SLOWDOWN * max(before.seconds, after.seconds)
    worker.send(signal.SIGTERM)
    assert worker.wait(15) == 0
