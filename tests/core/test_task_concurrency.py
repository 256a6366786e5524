"""Task-level concurrency (`@wurk_task(concurrency=...)`): the option's checks, the key the
client stamps, and in real worker processes: never more at once than the limit, every job
done, waiting jobs holding no thread, the drain as fast as the limit allows, a SIGKILLed
holder's slot back when its lease ends, and one limit per tenant key."""

import importlib
import json

import pytest

from tests.support.workers import wait_until
from wurk_django.core import Client, JobArgumentError, keys, wurk_task
from wurk_django.core.limiter import Limiter
from wurk_django.core.payload import loads

JOBS = "tests.core.limiter_jobs"
FAST = ("--heartbeat-interval", "0.5", "--poll-interval", "0.5")
SLOTS = "wurk:concurrency:tests.core.limiter_jobs.two_at_a_time"


def push(config, task: str, *args) -> str:
    return Client(config).push({"class": f"{JOBS}.{task}", "args": list(args)})


def events(redis_client) -> list[tuple[str, str, float]]:
    """(what, job, Redis time) of each event the jobs stamped, in order."""
    found = []
    for event in redis_client.lrange("lt:events", 0, -1):
        what, job, *rest = event.decode().split()
        found.append((what, job, float(rest[-1])))
    return found


def drain_s(redis_client) -> float:
    """From the first job's start to the last one's end, on Redis's clock."""
    stamps = events(redis_client)
    return (max(t for what, _, t in stamps if what == "end")
            - min(t for what, _, t in stamps if what == "start"))


# --- the option -----------------------------------------------------------------------

@pytest.mark.parametrize("value, problem", [
    (0, "at least 1"), (-2, "at least 1"), (1.5, "number of jobs"), (True, "number of jobs"),
    ({"limit": 2, "lease_s": 1}, "lease_s"), ({"limit": 2, "lease": 30}, "dict"),
    ({"lease_s": 30}, "at least 1"), ("5", "number of jobs"),
])
def test_a_bad_concurrency_is_refused_when_the_task_is_defined(value, problem):
    with pytest.raises(JobArgumentError, match=problem):
        @wurk_task(concurrency=value)
        def task():
            pass


def test_concurrency_belongs_to_the_task_not_to_one_call():
    @wurk_task(concurrency=2)
    def task():
        pass

    with pytest.raises(JobArgumentError, match="cannot be given in .set"):
        task.set(concurrency=5)


def test_a_concurrency_key_without_a_limit_is_refused():
    with pytest.raises(JobArgumentError, match="'concurrency_key' needs 'concurrency'"):
        @wurk_task(concurrency_key=lambda account: f"acct-{account}")
        def task(account):
            pass


def test_the_client_stamps_each_job_with_its_key(config, redis_client):
    @wurk_task(concurrency=3, concurrency_key=lambda account, amount: f"acct-{account}")
    def charge(account, amount):
        pass

    charge.perform_async(42, 500)
    [raw] = redis_client.lrange("queue:default", 0, -1)
    assert loads(raw)["concurrency"] == {"key": f"{charge.job_class.wire_name}:acct-42",
                                         "limit": 3, "lease_s": 30}


def test_a_failing_key_function_fails_the_push_naming_the_task(config, redis_client):
    @wurk_task(concurrency=1, concurrency_key=lambda user: {"not": "a key"})
    def sync(user):
        pass

    with pytest.raises(JobArgumentError, match="concurrency_key must return"):
        sync.perform_async(7)
    assert redis_client.llen("queue:default") == 0


# --- in real workers -------------------------------------------------------------------

@pytest.mark.slow
def test_two_at_a_time_in_2_processes_of_10_threads_without_blocking_any(
        config, start_worker, redis_client):
    # The baseline: the same jobs without a limit on exactly two threads, this machine now.
    for n in range(200):
        push(config, "unlimited_twin", n, 0.05)
    baseline = start_worker("-c", "2", *FAST, require=JOBS)
    wait_until(lambda: redis_client.llen("lt:done") == 200, 60, 0.05, "the baseline")
    baseline.stop()
    ideal = drain_s(redis_client)
    redis_client.delete("lt:events", "lt:done")

    for n in range(200):
        push(config, "two_at_a_time", n, 0.05)
    for n in range(16):
        push(config, "rendezvous", n, 16)
    start_worker("-p", "2", "-c", "10", *FAST, require=JOBS)
    wait_until(lambda: redis_client.llen("lt:done") == 200, 90, 0.05, "every limited job")
    limited = drain_s(redis_client)
    print(f"\nconcurrency=2, 200 x 50 ms on -p 2 -c 10: drain {limited:.2f} s; the same jobs "
          f"on two threads without a limit {ideal:.2f} s; ratio {limited / ideal:.2f} "
          f"(200 x 50 ms / 2 = 5.00 s)")
    assert int(redis_client.get("lt:max-running")) == 2
    assert sorted(int(n) for n in redis_client.lrange("lt:done", 0, -1)) == list(range(200))
    # 16 of the 20 threads met while limited jobs waited in Redis: none held a thread.
    met = [json.loads(m) for m in redis_client.lrange("lt:met", 0, -1)]
    assert len(met) == 16 and max(m["waiting"] for m in met) > 0
    # The target is 1.2x (the bench's row measures it); against this same machine's
    # baseline, a loaded one (other suites beside this one) is given up to 1.5x.
    assert limited <= 1.5 * ideal
    assert redis_client.zcard(SLOTS) == 0
    assert redis_client.scard(keys.CONCURRENCY_WAITING) == 0


@pytest.mark.slow
def test_a_sigkilled_holder_frees_its_slot_when_its_lease_ends(config, start_worker,
                                                                 redis_client):
    slots = "wurk:concurrency:tests.core.limiter_jobs.held_until_killed"
    holder = push(config, "held_until_killed", 1)
    doomed = start_worker("-c", "1", *FAST, require=JOBS)
    wait_until(lambda: events(redis_client), 30, message="the holder to start")
    push(config, "held_until_killed", 2)
    start_worker("-c", "1", *FAST, require=JOBS)
    wait_until(lambda: redis_client.llen(keys.concurrency_waiting(
        "tests.core.limiter_jobs.held_until_killed", "default")) == 1, 30,
        message="the other job to wait")
    # While its process lives, the holder's lease is renewed and the other job waits.
    granted = redis_client.zscore(slots, holder)
    wait_until(lambda: (redis_client.zscore(slots, holder) or 0) > granted + 2, 10,
               message="the lease renewed")
    assert [job for _, job, _ in events(redis_client)] == ["1"]
    doomed.process.kill()  # no supervisor: its job stays in its list, not run again soon
    doomed.process.wait(10)
    lease_end = redis_client.zscore(slots, holder)
    wait_until(lambda: len(events(redis_client)) == 2, 20, message="the waiting job to start")
    [_, (_, job, started)] = events(redis_client)
    late = started - lease_end
    print(f"\nwaiting job started {late * 1000:.0f} ms after the killed holder's lease ended")
    assert job == "2"
    assert 0 <= late < 2.5  # never while the lease ran; within a sweep (1 s) after it


@pytest.fixture
def tasks():
    """The job module imported here too, so pushes are stamped by this process's client."""
    module = importlib.import_module(JOBS)
    yield module
    Limiter.configure(errors=[], backoff=None)


@pytest.mark.slow
def test_each_tenant_has_its_own_limit(config, start_worker, redis_client, tasks):
    for n in range(10):
        for tenant in ("acme", "globex", "initech"):
            tasks.per_tenant.perform_async(tenant, n)
    start_worker("-c", "6", *FAST, require=JOBS)
    wait_until(lambda: redis_client.llen("lt:done") == 30, 60, message="every job")
    for tenant in ("acme", "globex", "initech"):
        assert int(redis_client.get(f"lt:max-running:{tenant}")) == 1
    assert int(redis_client.get("lt:max-running")) >= 2  # tenants ran side by side
