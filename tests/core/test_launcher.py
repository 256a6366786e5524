"""The launcher in this process: lifecycle events, handlers, heartbeat and stop."""

import json

import pytest

from tests.core import jobs
from tests.support.workers import wait_until
from wurk_django.core import ConfigurationError, keys
from wurk_django.core.heartbeat import cleanup_processes
from wurk_django.core.launcher import Launcher
from wurk_django.core.metrics import HISTOGRAM_BOUNDS_MS, HISTOGRAM_BUCKETS, bucket_for
from wurk_django.core.redis import connection_for


@pytest.fixture
def fast_config(config, redis_url, monkeypatch):
    monkeypatch.setenv("REDIS_URL", redis_url)  # the tasks in tests.core.jobs report here
    return config.replace(heartbeat_interval_s=0.2, poll_interval_average_s=0.2,
                          shutdown_timeout_s=2, concurrency=2)


def test_lifecycle_events_fire_in_the_documented_order(fast_config, redis_client):
    events = []
    for name in ("startup", "quiet", "shutdown", "exit", "heartbeat"):
        fast_config.on(name, lambda name=name: events.append(name))
    fast_config.on("quiet", lambda: events.append("quiet-2"))
    fast_config.on("beat", lambda: events.append("beat"))
    launcher = Launcher(fast_config)
    fast_config.fire_event("startup", reraise=True)
    launcher.run()
    wait_until(lambda: events.count("beat") >= 2, 5, message="two beats")
    launcher.stop()
    one_shot = [e for e in events if e not in ("beat",)]
    assert one_shot == ["startup", "heartbeat", "quiet-2", "quiet", "shutdown", "exit"]
    # One-shot handler lists are cleared after firing.
    assert fast_config.lifecycle_events["quiet"] == []
    assert fast_config.lifecycle_events["beat"]


def test_config_is_sealed_once_running(fast_config):
    launcher = Launcher(fast_config)
    launcher.run()
    try:
        with pytest.raises(ConfigurationError):
            fast_config.on("exit", lambda: None)
    finally:
        launcher.stop()


def test_a_failing_startup_handler_aborts_boot(fast_config):
    def broken():
        raise RuntimeError("no database")

    fast_config.on("startup", broken)
    reported = []
    fast_config.error_handlers.append(lambda exc, ctx, cfg: reported.append(ctx["context"]))
    with pytest.raises(RuntimeError):
        fast_config.fire_event("startup", reraise=True)
    assert reported == ["Exception during Wurk lifecycle event startup"]


def test_error_and_death_handlers_see_failures(fast_config, redis_client):
    failures, deaths = [], []
    fast_config.error_handlers.append(
        lambda exc, ctx, cfg: failures.append((type(exc).__name__, ctx["context"],
                                               ctx.get("job", {}).get("jid"))))
    fast_config.death_handlers.append(lambda job, exc: deaths.append(job["jid"]))

    def broken_handler(exc, ctx, cfg):
        raise RuntimeError("handler bug")  # logged, never propagated

    fast_config.error_handlers.append(broken_handler)
    jid = jobs.fails_without_retry.perform_async("down")
    launcher = Launcher(fast_config)
    launcher.run()
    try:
        wait_until(lambda: deaths, 5, message="a death handler call")
    finally:
        launcher.stop()
    assert deaths == [jid]
    assert ("RuntimeError", "Job raised exception", jid) in failures
    assert redis_client.zcard(keys.RETRY) == 0 and redis_client.zcard(keys.DEAD) == 0


def test_embedded_launcher_ignores_remote_signals(fast_config, redis_client):
    embedded = fast_config.replace(embedded=True)
    launcher = Launcher(embedded)
    launcher.run()
    try:
        info = json.loads(wait_until(lambda: redis_client.hget(launcher.identity, "info"), 5))
        assert info["embedded"] is True
        redis_client.lpush(keys.signals(launcher.identity), "TERM")
        wait_until(lambda: redis_client.llen(keys.signals(launcher.identity)) == 0, 5,
                   message="the signal to be popped")
        assert not launcher.pending_signals
    finally:
        launcher.stop()


def test_cleanup_drops_processes_without_a_heartbeat(config, redis_client):
    redis_client.sadd(keys.PROCESSES, "gone:1:aaaaaaaaaaaa", "alive:2:bbbbbbbbbbbb")
    redis_client.hset("alive:2:bbbbbbbbbbbb", "info", "{}")
    connection = connection_for(config)
    assert cleanup_processes(connection) == 1
    assert redis_client.smembers(keys.PROCESSES) == {b"alive:2:bbbbbbbbbbbb"}
    # The lock makes it run at most once a minute across the cluster.
    redis_client.sadd(keys.PROCESSES, "gone:3:cccccccccccc")
    assert cleanup_processes(connection) == 0
    assert 0 < redis_client.ttl(keys.PROCESS_CLEANUP) <= 60


def test_stop_unregisters_and_flushes_stats(fast_config, redis_client):
    for index in range(4):
        jobs.record.perform_async(index)
    launcher = Launcher(fast_config)
    launcher.run()
    wait_until(lambda: redis_client.llen("test:results") == 4, 5, message="four jobs")
    launcher.stop()
    assert redis_client.get(keys.STAT_PROCESSED) == b"4"
    assert launcher.identity.encode() not in redis_client.smembers(keys.PROCESSES)


class SkipOdd:
    """Server middleware: skips jobs whose first argument is odd (counts as success)."""

    def call(self, job_instance, job, queue, next_):
        if job["args"][0] % 2:
            return None
        return next_()


class Explode:
    def call(self, job_instance, job, queue, next_):
        raise LookupError("middleware refused")


def test_server_middleware_wraps_perform_and_may_skip_it(fast_config, redis_client):
    fast_config.server_middleware.add(SkipOdd)
    for value in range(6):
        jobs.record.perform_async(value)
    launcher = Launcher(fast_config)
    launcher.run()
    try:
        wait_until(lambda: redis_client.llen("test:results") == 3, 5, message="even jobs")
        wait_until(lambda: redis_client.get(keys.STAT_PROCESSED) == b"6", 5, message="stats")
    finally:
        launcher.stop()
    assert sorted(int(v) for v in redis_client.lrange("test:results", 0, -1)) == [0, 2, 4]
    assert redis_client.get(keys.STAT_FAILED) in (None, b"0")
    assert redis_client.zcard(keys.RETRY) == 0


def test_a_raising_server_middleware_sends_the_job_to_retry(fast_config, redis_client):
    fast_config.server_middleware.add(Explode)
    jid = jobs.record.perform_async(1)
    launcher = Launcher(fast_config)
    launcher.run()
    try:
        [entry] = wait_until(lambda: redis_client.zrange(keys.RETRY, 0, -1), 5, message="retry")
    finally:
        launcher.stop()
    job = json.loads(entry)
    assert job["jid"] == jid and job["error_class"] == "LookupError"


def histogram(redis_client, klass: str) -> list[int]:
    """The 26 run-time counters of `klass`, summed over its keys (runs may straddle a
    minute)."""
    total = [0] * HISTOGRAM_BUCKETS
    for key in redis_client.scan_iter(match=f"h|{klass}-*"):
        counters = redis_client.execute_command(
            "BITFIELD_RO", key, *[part for i in range(HISTOGRAM_BUCKETS)
                                  for part in ("GET", "u16", f"#{i}")])
        total = [a + b for a, b in zip(total, counters)]
    return total


def run_ms(redis_client, klass: str) -> int:
    """Milliseconds the successful runs of `klass` took, from the per-minute metrics."""
    minute_keys = [k for k in redis_client.scan_iter(match="j|*")
                   if len(k.rsplit(b":", 1)[1]) == 2]  # not the 10-minute roll-ups
    return sum(int(redis_client.hget(key, f"{klass}|ms") or 0) for key in minute_keys)


def test_histogram_counts_runs_per_bucket(fast_config, redis_client):
    for value in range(3):
        jobs.record.perform_async(value)
    jobs.slow.perform_async(0.6, "timed")
    launcher = Launcher(fast_config)
    launcher.run()
    wait_until(lambda: redis_client.llen("test:results") == 3, 5, message="three jobs")
    wait_until(lambda: redis_client.lrange("test:finished", 0, -1), 5, message="the slow job")
    launcher.stop()
    # The slow run sits in the bucket of the run time booked beside it, which no load
    # can bring under its 600 ms sleep: never in one of the buckets below 500 ms.
    slow, slow_ms = histogram(redis_client, jobs.slow.name), run_ms(redis_client, jobs.slow.name)
    assert slow_ms >= 600
    assert slow == [int(i == bucket_for(slow_ms)) for i in range(HISTOGRAM_BUCKETS)]
    assert sum(slow[:HISTOGRAM_BOUNDS_MS.index(500) + 1]) == 0
    # The three fast runs: one count each, in buckets whose bounds enclose their total.
    fast, fast_ms = histogram(redis_client, jobs.record.name), run_ms(redis_client,
                                                                      jobs.record.name)
    assert sum(fast) == 3
    lows = (0, *HISTOGRAM_BOUNDS_MS)
    highs = (*HISTOGRAM_BOUNDS_MS, float("inf"))
    assert (sum(n * lows[i] for i, n in enumerate(fast)) <= fast_ms
            < sum(n * highs[i] for i, n in enumerate(fast) if n))
    for key in redis_client.scan_iter(match="h|*"):
        assert 0 < redis_client.ttl(key) <= 28_800


def test_leader_event_fires_when_this_process_becomes_leader(fast_config, redis_client):
    gained = []
    config = fast_config.replace(leader_ttl_s=2, leader_renew_s=0.5, leader_retry_s=0.5)
    config.on("leader", lambda: gained.append(True))
    launcher = Launcher(config)
    launcher.run()
    try:
        wait_until(lambda: gained, 10, message="the leader event")
        assert redis_client.get("dear-leader").decode() == launcher.identity
    finally:
        launcher.stop()
