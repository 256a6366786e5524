"""Rate limiters in real worker processes: a concurrent limit holds across processes and
threads, a SIGKILLed holder's slot comes back after lock_timeout (never before, never
much later), every rate stays within its limit in every interval while using it fully,
and over-limit jobs are rescheduled (same jid) without being lost, doubled or failed."""

import importlib
import json

import pytest

from tests.core import batch_jobs
from tests.support.workers import WorkerProcess, wait_until, worker_env
from wurk_django.core import Batch, Client, keys
from wurk_django.core.api import DeadSet
from wurk_django.core.limiter import Limiter
from wurk_django.core.payload import loads

pytestmark = pytest.mark.slow

JOBS = "tests.core.limiter_jobs"
FAST = ("--heartbeat-interval", "0.5", "--poll-interval", "0.5")
INTERVALS = 10


def redis_now(redis_client) -> float:
    seconds, micros = redis_client.time()
    return seconds + micros / 1_000_000


def push(config, task: str, *args, **fields) -> str:
    return Client(config).push({"class": f"{JOBS}.{task}", "args": list(args), **fields})


def processed(redis_client) -> int:
    return int(redis_client.get(keys.STAT_PROCESSED) or 0)


# --- concurrent ---------------------------------------------------------------------

def test_a_concurrent_limit_of_3_holds_for_2_processes_of_10_threads_for_20_s(
        config, start_worker, redis_client):
    for _ in range(20):
        push(config, "overlap_loop", "lt-erp", 3)
    start_worker("-p", "2", "-c", "10", *FAST, require=JOBS)
    wait_until(lambda: redis_client.scard("lt:pids") == 2, 30, message="both processes")
    started = redis_now(redis_client)
    # The load runs for 20 s of Redis's clock; the test waits on that clock, polling.
    wait_until(lambda: redis_now(redis_client) - started >= 20, 40, 0.2, "20 s of load")
    redis_client.set("lt:stop", 1)
    wait_until(lambda: processed(redis_client) == 20, 30, message="every loop to end")
    calls, most = int(redis_client.get("lt:calls")), int(redis_client.get("lt:max"))
    print(f"\nconcurrent size=3: {calls} calls in 20 s, at most {most} inside at once")
    assert most == 3  # never more than the limit, and the limit was used
    assert int(redis_client.get("lt:inside")) == 0
    assert int(redis_client.get(keys.STAT_FAILED) or 0) == 0
    metrics = Limiter.concurrent("lt-erp", 3).status()["metrics"]
    assert metrics["held"] == calls and metrics["overages"] == 0


def test_a_holder_sigkilled_inside_frees_its_slot_after_lock_timeout_as_reclaimed(
        config, start_worker, redis_client):
    lock_timeout = 4.0
    push(config, "hold_forever", "lt-mutex", lock_timeout)
    worker = start_worker("-c", "1", *FAST, require=JOBS)
    holding = json.loads(wait_until(lambda: redis_client.lpop("lt:holding"), 30,
                                    message="the job holding the slot"))
    worker.process.kill()
    worker.process.wait(10)
    limiter = Limiter.concurrent("lt-mutex", 1, wait_timeout=60, lock_timeout=lock_timeout)
    waiting_since = redis_now(redis_client)
    assert waiting_since < holding["expiry"], "the waiter must start before the lease ends"
    with limiter.acquire() as handle:
        late = handle.admitted_at - holding["expiry"]
    print(f"\nslot of a SIGKILLed holder back {late * 1000:.0f} ms after its lease ended")
    assert 0 <= late < 1.0  # never before lock_timeout; at the waiter's next poll after
    assert limiter.status()["metrics"]["reclaimed"] == 1


# --- bucket, window, leaky, points ----------------------------------------------------

@pytest.fixture(scope="module")
def admissions(redis_server, tmp_path_factory):
    """Run three callers of each rate limiter in two worker processes for INTERVALS
    seconds (plus the boot), and return every admission time, per limiter."""
    import redis

    client = redis.Redis.from_url(redis_server.url)
    client.flushall()
    seconds, _ = client.time()
    until = seconds + INTERVALS + 6  # a whole second: bucket boundaries line up
    pusher = Client(_config(redis_server.url))
    for kind in ("bucket", "window", "leaky", "points"):
        for _ in range(3):
            pusher.push({"class": f"{JOBS}.rate_loop", "args": [kind, until]})
    log = tmp_path_factory.mktemp("rates") / "worker.log"
    worker = WorkerProcess(["--require", JOBS, "-p", "2", "-c", "6", *FAST],
                           worker_env(redis_server.url), log).start()
    try:
        wait_until(lambda: int(client.get(keys.STAT_PROCESSED) or 0) == 12, 60, 0.2,
                   "the callers to reach the end")
        found = {kind: sorted(float(t) for t in client.lrange(f"lt:admitted:{kind}", 0, -1))
                 for kind in ("bucket", "window", "leaky", "points")}
    finally:
        worker.stop()
        client.flushall()
        client.close()
    return until - INTERVALS, until, found


def _config(url):
    from wurk_django.core import Config
    return Config(redis_url=url)


def _measured(admissions, kind):
    start, end, found = admissions
    times = found[kind]
    assert times and times[0] < start, f"{kind}: callers started after the measured span"
    return start, end, [t for t in times if start <= t < end]


def _per_interval(start, times) -> list[int]:
    counts = [0] * INTERVALS
    for t in times:
        counts[int(t - start)] += 1
    return counts


def test_a_bucket_admits_at_most_its_count_between_boundaries_and_fills_each(admissions):
    start, _, times = _measured(admissions, "bucket")
    counts = _per_interval(start, times)  # start is a whole second: one bucket each
    print(f"\nbucket 12/s, per interval: {counts}")
    assert max(counts) <= 12
    assert sum(counts) >= 0.9 * 12 * INTERVALS


def test_a_window_admits_at_most_its_count_in_any_sliding_interval(admissions):
    start, _, times = _measured(admissions, "window")
    all_times = admissions[2]["window"]
    # What the script counts when it admits at t: the calls of [t - 1, t].
    heaviest, first = 0, 0
    for last, t in enumerate(all_times):
        while all_times[first] < t - 1 - 1e-6:
            first += 1
        heaviest = max(heaviest, last - first + 1)
    print(f"\nwindow 12/1 s: per interval {_per_interval(start, times)}, "
          f"heaviest sliding second {heaviest}")
    assert heaviest <= 12
    assert len(times) >= 0.9 * 12 * INTERVALS


def _never_overdrawn(times, size, rate) -> float:
    """Replay a token bucket of `size` refilled at `rate`: the lowest level it reached
    (below zero means a call was admitted that the limit did not allow)."""
    level, last, lowest = size, times[0], size
    for t in times:
        level = min(size, level + (t - last) * rate) - 1
        last = t
        lowest = min(lowest, level)
    return lowest


def test_a_leaky_bucket_never_overflows_and_drains_at_its_rate(admissions):
    start, _, times = _measured(admissions, "leaky")
    counts = _per_interval(start, times)
    print(f"\nleaky 6 per 1 s, per interval: {counts}")
    assert _never_overdrawn(admissions[2]["leaky"], 6, 6.0) >= -1e-6
    assert max(counts) <= 6 + 6  # a full bucket plus one drain: the most any second holds
    assert sum(counts) >= 0.9 * 6 * INTERVALS


def test_a_points_limiter_never_spends_points_it_does_not_have(admissions):
    start, _, times = _measured(admissions, "points")
    counts = _per_interval(start, times)
    print(f"\npoints 12 refilled 12/s, per interval: {counts}")
    assert _never_overdrawn(admissions[2]["points"], 12, 12.0) >= -1e-6
    assert max(counts) <= 12 + 12
    assert sum(counts) >= 0.9 * 12 * INTERVALS


# --- over limit inside a job --------------------------------------------------------

@pytest.fixture
def quick_backoff():
    return {"LT_BACKOFF_S": "0.2"}


def test_over_limit_jobs_are_rescheduled_with_their_jid_none_lost_none_doubled(
        config, start_worker, redis_client, quick_backoff):
    jids = {push(config, "limited", n, outcome_probe=1) for n in range(40)}
    start_worker("-p", "2", "-c", "5", *FAST, require=JOBS, env=quick_backoff)
    wait_until(lambda: redis_client.llen("lt:done") >= 40, 90, 0.1, "every job to finish")
    wait_until(lambda: redis_client.zcard(keys.SCHEDULE) == 0, 10, message="no reschedule left")
    done = sorted(int(n) for n in redis_client.lrange("lt:done", 0, -1))
    assert done == list(range(40))  # each ran to the end exactly once
    outcomes = [json.loads(o) for o in redis_client.lrange("lt:outcomes", 0, -1)]
    handled = [jid for jid, outcome in outcomes if outcome == "handled"]
    print(f"\n40 jobs, {len(handled)} reschedules")
    assert handled and set(handled) <= jids  # rescheduled as themselves
    assert sorted(jid for jid, outcome in outcomes if outcome == "ok") == sorted(jids)
    assert not any(outcome == "failed" for _, outcome in outcomes)
    wait_until(lambda: processed(redis_client) == len(outcomes), 10, message="the counters")
    assert int(redis_client.get(keys.STAT_FAILED) or 0) == 0
    assert redis_client.zcard(keys.RETRY) == 0 and redis_client.zcard(keys.DEAD) == 0
    stats = redis_client.hget("lmtr-stats:lt-resched", "reschedules")
    assert int(stats) == len(handled)


@pytest.fixture
def tasks():
    """The job module imported here too, to push its tasks inside a batch block."""
    module = importlib.import_module(JOBS)
    yield module
    Limiter.configure(errors=[], backoff=None)


def test_a_rescheduled_job_is_neither_success_nor_failure_for_its_batch(
        config, start_worker, redis_client, quick_backoff, tasks):
    with Batch(on_success=batch_jobs.Recorder, on_complete=batch_jobs.Recorder):
        for n in range(10):
            tasks.limited.perform_async(n)
    start_worker("-c", "5", *FAST, "--require", "tests.core.batch_jobs", require=JOBS,
                 env=quick_backoff)
    wait_until(lambda: len(batch_jobs.events(redis_client, "callbacks")) == 2, 60, 0.1,
               "the batch's callbacks")
    assert sorted(int(n) for n in redis_client.lrange("lt:done", 0, -1)) == list(range(10))
    assert int(redis_client.hget("lmtr-stats:lt-resched", "reschedules")) > 0
    last_done = max(float(t) for t in redis_client.lrange("lt:done-at", 0, -1))
    for event in batch_jobs.events(redis_client, "callbacks"):
        # Fired once every job had run, never by a reschedule counted as an end.
        assert event["at"] >= last_done and (event["pending"], event["failures"]) == (0, 0)
    assert sorted(e["event"] for e in batch_jobs.events(redis_client, "callbacks")) == \
        ["complete", "success"]


def test_a_429_from_a_client_library_reschedules_the_job_instead_of_failing_it(
        config, start_worker, redis_client, quick_backoff):
    jid = push(config, "calls_an_api", 7)
    start_worker(*FAST, require=JOBS, env=quick_backoff)
    wait_until(lambda: redis_client.lrange("lt:done", 0, -1) == [b"7"], 30, message="the job")
    assert int(redis_client.get("lt:api:7")) == 3
    wait_until(lambda: processed(redis_client) == 3, 10, message="the counters")
    assert int(redis_client.get(keys.STAT_FAILED) or 0) == 0
    assert redis_client.zcard(keys.RETRY) == 0 and redis_client.zcard(keys.DEAD) == 0
    assert jid


def test_past_its_reschedule_cap_a_job_is_dead_and_a_retry_gets_a_full_round(
        config, start_worker, redis_client, quick_backoff):
    jid = push(config, "over_cap", 1, outcome_probe=1)
    start_worker(*FAST, require=JOBS, env=quick_backoff)
    wait_until(lambda: redis_client.zcard(keys.DEAD) == 1, 30, message="the job's death")
    [raw] = redis_client.zrange(keys.DEAD, 0, -1)
    dead = loads(raw)
    assert dead["jid"] == jid and dead["error_class"] == "wurk_django.core.errors.OverLimit"
    assert dead["error_message"].startswith("rate_limited: ")
    assert dead["error_message"].endswith("(overrated=3)")
    assert "overrated" not in dead  # the next round starts from zero
    assert redis_client.llen("lt:attempts") == 3
    assert redis_client.zcard(keys.RETRY) == 0  # the cap sends it to dead, not to retries
    assert [json.loads(d) for d in redis_client.lrange("lt:deaths", 0, -1)] == \
        [[jid, "OverLimit"]]
    wait_until(lambda: redis_client.get(keys.STAT_FAILED) == b"1", 10,
               message="the death counted as a failure")

    [entry] = DeadSet(config)
    entry.retry()  # a person sends it back: three more attempts, not one
    wait_until(lambda: redis_client.llen("lt:attempts") == 6
               and redis_client.zcard(keys.DEAD) == 1, 30, message="the second round")
    assert loads(redis_client.zrange(keys.DEAD, 0, -1)[0])["error_message"].endswith(
        "(overrated=3)")
