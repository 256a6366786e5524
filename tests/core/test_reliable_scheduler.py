"""The reliable scheduler: due members of `schedule` and `retry` are prepared in Python
and moved by one script per batch, push before remove, so a worker killed mid-move
loses none; middleware still sees each promotion."""

import os
import signal
import time

import pytest

from tests.core.test_supervisor import swarm, wait_for_children  # noqa: F401
from tests.support.workers import children, wait_until
from wurk_django.core import Client, Config, keys
from wurk_django.core.payload import dumps, loads, new_jid
from wurk_django.core.redis import connection_for
from wurk_django.core.scheduled import PROMOTE_BATCH, Enqueuer

FAST = ("--heartbeat-interval", "0.5", "--reaper-interval", "1", "--poll-interval", "0.2")


def due_member(jid: str, **fields) -> bytes:
    return dumps({"class": "tests.core.jobs.Tally", "args": [], "jid": jid,
                  "queue": "default", "retry": True, "created_at": 1, **fields})


def enqueuer(config) -> Enqueuer:
    return Enqueuer(config, connection_for(config), Client(config))


def test_due_members_move_in_batches_and_later_ones_stay(config, redis_client):
    now = time.time()
    members = {due_member(f"due-{n}"): now - 10 for n in range(PROMOTE_BATCH + 20)}
    members[due_member("later")] = now + 3600
    redis_client.zadd(keys.SCHEDULE, members)
    redis_client.zadd(keys.RETRY, {due_member("retry", queue="critical"): now - 1})
    before = script_calls(redis_client)
    assert enqueuer(config).enqueue_jobs() == PROMOTE_BATCH + 21
    assert redis_client.zrange(keys.SCHEDULE, 0, -1) == [due_member("later")]
    assert redis_client.zcard(keys.RETRY) == 0
    pushed = [loads(raw) for raw in redis_client.lrange("queue:default", 0, -1)]
    assert len(pushed) == PROMOTE_BATCH + 20 and all("enqueued_at" in job for job in pushed)
    assert [loads(r)["jid"] for r in redis_client.lrange("queue:critical", 0, -1)] == ["retry"]
    assert redis_client.smembers(keys.QUEUES) == {b"default", b"critical"}
    assert script_calls(redis_client) - before == 3  # 500 + 20 from schedule, 1 from retry


def script_calls(redis_client) -> int:
    """EVALSHA calls that ran (a script's first call may fail NOSCRIPT, then load)."""
    stats = redis_client.info("commandstats").get("cmdstat_evalsha", {})
    return stats.get("calls", 0) - stats.get("failed_calls", 0)


def test_a_member_another_poller_moved_is_not_pushed_twice(config, redis_client):
    member = due_member("raced")
    redis_client.zadd(keys.SCHEDULE, {member: 1})
    mover = enqueuer(config)
    moved = mover._promote([member, due_member("gone-already")], keys.SCHEDULE)
    assert moved == 1 and redis_client.llen("queue:default") == 1


def test_middleware_sees_each_promotion_and_may_halt_it(redis_url, redis_client):
    config = Config(redis_url=redis_url)
    seen = []

    class Stamp:
        def call(self, klass, job, queue, redis, next_):
            seen.append(job["jid"])
            if job["jid"] == "halted":
                return None
            job["stamped"] = True
            return next_()

    config.client_middleware.add(Stamp)
    redis_client.zadd(keys.SCHEDULE, {due_member("kept"): 1, due_member("halted"): 2})
    assert enqueuer(config).enqueue_jobs() == 2
    assert sorted(seen) == ["halted", "kept"]
    [job] = [loads(raw) for raw in redis_client.lrange("queue:default", 0, -1)]
    assert job["jid"] == "kept" and job["stamped"] is True
    assert redis_client.zcard(keys.SCHEDULE) == 0 and redis_client.zcard(keys.DEAD) == 0


def test_a_member_that_cannot_be_pushed_is_kept_in_the_dead_set(config, redis_client):
    bad = b'{"class": "X", "args": "not a list"}'
    redis_client.zadd(keys.SCHEDULE, {bad: 1, due_member("fine"): 1})
    assert enqueuer(config).enqueue_jobs() == 2
    assert redis_client.zrange(keys.DEAD, 0, -1) == [bad]
    assert redis_client.llen("queue:default") == 1


def test_the_old_one_at_a_time_path_is_kept_behind_the_setting(redis_url, redis_client):
    config = Config(redis_url=redis_url, reliable_scheduler=False)
    redis_client.zadd(keys.SCHEDULE, {due_member(f"j{n}"): 1 for n in range(3)})
    assert enqueuer(config).enqueue_jobs() == 3
    assert "cmdstat_evalsha" in redis_client.info("commandstats")  # pop_by_score
    assert redis_client.llen("queue:default") == 3


# --- a worker SIGKILLed while it promotes ---------------------------------------------

DUE_JOBS = 10_000
KILLS = 3


@pytest.mark.slow
def test_sigkilling_a_worker_mid_promotion_loses_no_scheduled_job(
        config, swarm, redis_client, capsys):  # noqa: F811 - the fixture imported above
    jids = [new_jid() for _ in range(DUE_JOBS)]
    # Each promotion takes 1 ms in the hook (tests/core/scheduler_jobs.py): 10 s of
    # promoting, so the kills land mid-move.
    for start in range(0, DUE_JOBS, 1000):
        redis_client.zadd(keys.SCHEDULE, {due_member(jid, slow_promote=1): 1
                                          for jid in jids[start:start + 1000]})
    worker = swarm(*FAST, "-p", "2", "-c", "5", require="tests.core.scheduler_jobs")
    wait_for_children(redis_client, worker.pid, 2)
    at_kill = []
    for _ in range(KILLS):
        left = redis_client.zcard(keys.SCHEDULE)
        # A child is promoting: the hook has noted its pid since the last kill.
        promoter = wait_until(lambda: _promoter(redis_client, worker.pid), 20,
                              message="a child promoting")
        wait_until(lambda left=left: redis_client.zcard(keys.SCHEDULE) < left, 20,
                   message="members moving")
        os.kill(promoter, signal.SIGKILL)
        at_kill.append(redis_client.zcard(keys.SCHEDULE))
        redis_client.delete("test:promoter")
    assert all(0 < left < DUE_JOBS for left in at_kill), at_kill  # each kill was mid-move
    wait_until(lambda: redis_client.scard("test:jids") == DUE_JOBS, 60,
               message="every scheduled job run")
    runs = int(redis_client.get("test:runs"))
    with capsys.disabled():
        print(f"\nreliable scheduler: {DUE_JOBS} due jobs, {KILLS} SIGKILLs of the promoting "
              f"child with {at_kill} members left in `schedule`; {DUE_JOBS} ran, 0 lost, "
              f"{runs - DUE_JOBS} run twice (reclaimed from a killed child's in-flight list)")
    assert {m.decode() for m in redis_client.smembers("test:jids")} == set(jids)


def _promoter(redis_client, supervisor: int) -> int | None:
    pid = redis_client.get("test:promoter")
    if pid is None or int(pid) not in children(supervisor):
        return None
    return int(pid)
