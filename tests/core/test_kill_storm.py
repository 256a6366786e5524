"""Capacity under faults: `-p 2` children SIGKILLed every 1.5 s keep a child serving and
drain a queue within twice the unharmed time, losing no job.

Both drains run in the same test on the same supervisor, the unharmed one first, so a
loaded machine slows both: the assertion is on their ratio and on a share of samples,
never on seconds. The jobs mostly sleep, so CPU load from other tests stretches the
restarts (fork, boot, first heartbeat) more than the work itself; the 2x target leaves
room for that, and the share counts samples, which a busy sampler takes fewer of but
not less fairly.
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
    while redis_client.scard("test:jids") < JOBS:
        now = time.monotonic()
        if now - began > give_up_s:
            return run
        live = children(parent)
        for pid in live:
            born.setdefault(pid, now)
        run.samples += 1
        run.serving += bool(live & registered(redis_client))
        if now >= next_kill:
            if live:
                victim = min(live, key=born.get)  # the oldest: the one surely serving
                os.kill(victim, signal.SIGKILL)
                run.kills.append(victim)
            else:
                run.childless_kill_ticks += 1
            next_kill = max(next_kill + kill_every_s, now + kill_every_s / 2)
        time.sleep(max(0.0, now + SAMPLE_EVERY_S - time.monotonic()))  # the sampling pace
    run.seconds = time.monotonic() - began
    return run


def test_a_kill_storm_keeps_a_child_serving_and_drains_within_twice_the_time(
        config, swarm, redis_client):
    worker = swarm("-p", "2", "-c", str(THREADS), "-t", "5", *FAST)
    wait_for_children(redis_client, worker.pid, 2)
    calm = drain(redis_client, worker.pid, give_up_s=120)
    assert calm.seconds < math.inf, "the unharmed drain did not finish"
    wait_until(lambda: settled(redis_client), 20, 0.1, "every ack of the unharmed drain")
    storm = drain(redis_client, worker.pid, give_up_s=3 * MAX_SLOWDOWN * calm.seconds,
                  kill_every_s=KILL_EVERY_S)
    done = redis_client.scard("test:jids")
    print(f"\nkill storm: unharmed {calm.seconds:.1f} s ({calm.share:.1%} of "
          f"{calm.samples} samples serving); storm {storm.seconds:.1f} s "
          f"({storm.seconds / calm.seconds:.2f}x), {len(storm.kills)} SIGKILLs, "
          f"{storm.childless_kill_ticks} kill ticks with no live child, a child serving in "
          f"{storm.share:.1%} of {storm.samples} samples; {done} of {JOBS} done")
    assert len(storm.kills) >= 3, "the storm ended before it began"
    assert storm.share >= MIN_SERVING_SHARE
    assert storm.seconds <= MAX_SLOWDOWN * calm.seconds
    wait_until(lambda: settled(redis_client), 30, 0.1, "queues and private lists to empty")
    runs = int(redis_client.get("test:runs"))
    print(f"kill storm: {JOBS - redis_client.scard('test:jids')} lost, "
          f"{runs - JOBS} duplicates")
    assert redis_client.scard("test:jids") == JOBS  # none lost
    assert redis_client.zcard(keys.DEAD) == 0
    # A job ran twice only because the process that ran it first was killed before its
    # acknowledgement went out.
    assert extra_runs_outside(redis_client, set(storm.kills)) == {}
    worker.send(signal.SIGTERM)
    assert worker.wait(15) == 0
