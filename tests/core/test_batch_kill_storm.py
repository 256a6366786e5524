"""Batches under a kill storm: `-p 2` workers whose children are SIGKILLed every 2 s while
a batch of 10,000 jobs (a few failing twice first) and a three-level workflow run.

`complete` and `success` must each fire once, after every job ran; the workflow's steps
must run in order, each started once, and each callback fire once. A callback or job may
run a second time only because the process that ran it first was killed before its ack
(a reliable job is at least once); a second run anywhere else would be a second fire.
"""

import itertools
import os
import signal
import time
from collections import Counter

import pytest

from tests.core import batch_jobs
from tests.core.test_batch_workers import hurry_retries
from tests.core.test_no_job_lost import extra_runs_outside
from tests.core.test_supervisor import FAST, swarm, wait_for_children  # noqa: F401
from tests.support.workers import children
from wurk_django.core import Batch, BatchStatus
from wurk_django.core.workflow import Workflow

pytestmark = pytest.mark.slow

JOBS = 10_000
FLAKY = 20
WORK_MS = 20  # 10,000 x 20 ms over 2 x 10 threads: 10 s of drain at full strength
STEP_MS = 1000  # the workflow's jobs take longer, so its steps span several kills
KILL_EVERY_S = 2.0
GIVE_UP_S = 240


def three_level_workflow() -> Workflow:
    level3 = (Workflow("level 3", on_success=(batch_jobs.Recorder, {"level": 3}))
              .step((batch_jobs.Step, "3a", STEP_MS), (batch_jobs.Step, "3a", STEP_MS))
              .step((batch_jobs.Step, "3b", STEP_MS)))
    level2 = (Workflow("level 2", on_success=(batch_jobs.Recorder, {"level": 2}))
              .step(*[(batch_jobs.Step, "2a", STEP_MS)] * 5)
              .step(level3, (batch_jobs.Step, "2b", STEP_MS))
              .step((batch_jobs.Step, "2c", STEP_MS)))
    return (Workflow("level 1", on_success=(batch_jobs.Recorder, {"level": 1}))
            .step(*[(batch_jobs.Step, "1a", STEP_MS)] * 5)
            .step(level2)
            .step((batch_jobs.Step, "1b", STEP_MS)))


def storm(redis_client, parent: int, done) -> tuple[list[int], float]:
    """SIGKILL a child every KILL_EVERY_S (alternating oldest and newest) until `done()`;
    retries are made due as they are booked. Returns the killed pids and the time."""
    began, killed, born, next_kill = time.monotonic(), [], {}, time.monotonic() + KILL_EVERY_S
    while not done():
        now = time.monotonic()
        assert now - began < GIVE_UP_S, f"still not done after {GIVE_UP_S} s"
        live = children(parent)
        for pid in live:
            born.setdefault(pid, now)
        if now >= next_kill and live:
            ordered = sorted(live, key=born.get)
            victim = ordered[len(killed) % len(ordered)]
            os.kill(victim, signal.SIGKILL)
            killed.append(victim)
            next_kill = now + KILL_EVERY_S
        hurry_retries(redis_client)
        time.sleep(0.05)  # the storm's pace, not a wait for a result
    return killed, time.monotonic() - began


def fires(redis_client, killed: set[int]) -> dict:
    """(bid, event, level) -> runs of that callback outside the killed processes, and in
    all."""
    outside, overall = Counter(), Counter()
    for event in batch_jobs.events(redis_client, "callbacks"):
        key = (event["bid"], event["event"], (event["options"] or {}).get("level"))
        overall[key] += 1
        if event["pid"] not in killed:
            outside[key] += 1
    return {"outside": outside, "all": overall}


def test_callbacks_fire_exactly_once_through_a_kill_storm(
        config, swarm, redis_client):  # noqa: F811 - the fixture imported above
    with Batch(description="storm", on_complete=batch_jobs.Recorder,
               on_success=batch_jobs.Recorder) as batch:
        batch_jobs.Work.perform_bulk([[WORK_MS]] * (JOBS - FLAKY))
        flaky = [batch_jobs.FailsTwice.perform_async() for _ in range(FLAKY)]
    flow = three_level_workflow().run()
    worker = swarm("-p", "2", "-c", "10", "-t", "5", *FAST, require="tests.core.batch_jobs")
    wait_for_children(redis_client, worker.pid, 2)

    def done() -> bool:
        finished = [event for event in batch_jobs.events(redis_client, "callbacks")
                    if event["event"] == "success"]
        return ({event["bid"] for event in finished} >= {batch.bid, flow.bid}
                and redis_client.llen("queue:default") == 0)

    killed, seconds = storm(redis_client, worker.pid, done)
    runs = {jid.decode(): int(count) for jid, count in redis_client.hgetall("test:runs").items()}
    counted = fires(redis_client, set(killed))
    print(f"\nbatch kill storm: {JOBS} jobs + workflow in {seconds:.1f} s, {len(killed)} "
          f"SIGKILLs; jobs run {sum(runs.values())} times for {len(runs)} jids "
          f"({sum(runs.values()) - len(runs)} duplicates, all from killed processes); "
          f"callback runs {dict(counted['all'])}")
    assert len(killed) >= 3, "the storm ended before it began"

    mine = {key: count for key, count in counted["all"].items() if key[0] == batch.bid}
    assert sorted(key[1] for key in mine) == ["complete", "success"]
    for key in mine:  # fired once: any second run was of a killed process's first
        assert counted["outside"][key] <= 1 and counted["all"][key] <= 2
    for event in batch_jobs.events(redis_client, "callbacks"):
        if event["bid"] == batch.bid:
            assert event["ran"] == JOBS  # every job of the batch had run first
    status = BatchStatus(batch.bid)
    assert (status.total, status.pending, status.failures) == (JOBS, 0, 0)
    assert all(jid in runs for jid in flaky)

    levels = sorted(key[2] for key in counted["all"] if key[0] != batch.bid)
    assert levels == [1, 2, 3]
    for key, count in counted["all"].items():
        assert counted["outside"][key] <= 1 and count <= 2
    steps = [entry.decode().split() for entry in redis_client.lrange("test:steps", 0, -1)]
    labels = [label for label, _ in steps]
    order = ["1a", "2a", "3a", "3b", "2c", "1b"]
    positions = {label: [i for i, seen in enumerate(labels) if seen == label]
                 for label in order + ["2b"]}
    for before, after in itertools.pairwise(order):
        assert max(positions[before]) < min(positions[after]), (before, after, labels)
    assert max(positions["2a"]) < min(positions["2b"]) < min(positions["2c"])
    # Each step started once: as many distinct jobs per label as the workflow has.
    jids = {label: {jid for seen, jid in steps if seen == label} for label in positions}
    assert {label: len(found) for label, found in jids.items()} == {
        "1a": 5, "2a": 5, "3a": 2, "3b": 1, "2b": 1, "2c": 1, "1b": 1}
    # A job ran twice only where its first run's process was killed before the ack.
    assert extra_runs_outside(redis_client, set(killed)) == {}
    assert BatchStatus(flow.bid).success
    worker.send(signal.SIGTERM)
    worker.wait(20)

