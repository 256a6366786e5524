"""Sidekiq 6.4 itself reads what Wurk writes: its Queue, RetrySet, ScheduledSet, DeadSet,
ProcessSet, WorkSet and Stats, in a Ruby process on the suite's redis-server
(tests/compat/ruby/sidekiq_reads.rb), after a real Wurk worker ran and failed jobs.

With `timestamp_format="float"` Sidekiq 6.4 shows every time right. With the default,
Sidekiq 8's integer milliseconds, Sidekiq 6.4 takes the milliseconds for seconds and dates
the jobs tens of thousands of years ahead (the year 58886 for a job made in 2026): that is
why the setting exists, and the default test holds it so a silent change of default fails.
"""

import json
import os
import socket
import subprocess
import time
from dataclasses import dataclass

import pytest

from tests.compat import jobs
from tests.compat.goldens import GOLDEN_DIR, golden, type_differences
from tests.compat.goldens import versions as golden_versions
from tests.support.ruby import RUBY_DIR, require_sidekiq, run_ruby, sidekiq_version
from tests.support.workers import wait_until
from wurk_django.core import Client, Config, keys, set_default_config
from wurk_django.core.payload import loads
from wurk_django.core.project_redis import redis_server_binary
from wurk_django.core.redis import close_connections

pytestmark = pytest.mark.slow

FAST = ("--heartbeat-interval", "0.5", "--poll-interval", "0.5")
EDGE_ARGS = ["Grüße aus Zürich – “quoted” 🚀", 2 ** 53 + 1, -3.75, 1.5e-07, None, False,
             {"n": [1, 2.5]}]
FAR_FUTURE_YEAR = 50_000
SECONDS_PER_YEAR = 365.2425 * 86_400


@pytest.fixture(autouse=True)
def _sidekiq():
    require_sidekiq()


@dataclass
class Fleet:
    """What a Wurk worker wrote, the time window it wrote it in, and Sidekiq's reading
    (done by `read_done`)."""

    before: float
    after: float
    read_done: float
    pid: int
    identity: str
    read: dict


def _run_fleet(redis_url, redis_client, start_worker, config, worker_flags) -> Fleet:
    set_default_config(config)
    try:
        before = time.time()
        jobs.Record.set(queue="parked", tags=["billing"]).perform_async(*EDGE_ARGS)
        Client().push({"class": "billing.tasks.charge", "queue": "parked", "args": [42]})
        jobs.Charge.perform_in(3600, 7)
        jobs.SlowRetry.perform_async("tok_visa")
        jobs.DoomedJob.perform_async("x")
        jobs.Hold.perform_async("busy")
    finally:
        set_default_config(None)
        close_connections()
    worker = start_worker("-c", "3", "-q", "default", "-g", "wurk-fleet", "--label", "blue",
                          *worker_flags, *FAST, require="tests.compat.jobs")
    [identity] = wait_until(lambda: redis_client.smembers(keys.PROCESSES), 15,
                            message="a heartbeat")
    identity = identity.decode()
    wait_until(lambda: (redis_client.zcard(keys.RETRY), redis_client.zcard(keys.DEAD),
                        redis_client.get(keys.STAT_FAILED),
                        redis_client.hget(identity, "busy")) == (1, 1, b"2", b"1"), 15,
               message="a retry, a dead job, two failures counted and one busy job")
    after = time.time()
    read = run_ruby("sidekiq_reads.rb", redis_url)
    read_done = time.time()
    redis_client.rpush(jobs.RELEASE, "go")
    return Fleet(before, after, read_done, worker.pid, identity, read)


def _year_of(epoch_s: float) -> int:
    return time.gmtime(epoch_s).tm_year


def _assert_contents(fleet: Fleet):
    """Everything but the job timestamps, which depend on the form written."""
    read = fleet.read
    assert read["sidekiq"].startswith("6.")
    assert {q["name"]: q["size"] for q in read["queues"]} == {"default": 0, "parked": 2}
    [parked] = [q for q in read["queues"] if q["name"] == "parked"]
    assert [(j["klass"], j["args"], j["queue"], j["tags"]) for j in parked["jobs"]] == [
        ("billing.tasks.charge", [42], "parked", []),
        ("tests.compat.jobs.Record", EDGE_ARGS, "parked", ["billing"])]

    [retry] = read["retries"]
    assert (retry["klass"], retry["args"], retry["queue"]) == ("SlowRetry", ["tok_visa"],
                                                              "default")
    assert (retry["error_class"], retry["error_message"]) == ("ValueError",
                                                              "card declined: tok_visa")
    assert retry["retry_count"] == 0 and retry["error"] is True
    # Sidekiq decompressed Wurk's backtrace (strict base64 of zlib'd JSON).
    assert any("tests/compat/jobs.py" in line and "perform" in line
               for line in retry["error_backtrace"])
    assert fleet.before + 3600 <= retry["at"]["epoch"] <= fleet.after + 3600 + 10

    [scheduled] = read["scheduled"]
    assert (scheduled["klass"], scheduled["args"], scheduled["queue"]) == (
        "Compat::Charge", [7], "compat")
    assert fleet.before + 3600 <= scheduled["at"]["epoch"] <= fleet.after + 3600

    [dead] = read["dead"]
    assert (dead["klass"], dead["error_class"], dead["retry_count"]) == (
        "DoomedJob", "RuntimeError", 0)
    assert fleet.before <= dead["at"]["epoch"] <= fleet.after

    _assert_process(fleet)
    assert read["stats"] == {
        "processed": 2, "failed": 2, "scheduled_size": 1, "retry_size": 1, "dead_size": 1,
        "enqueued": 2, "processes_size": 1, "workers_size": 1, "default_queue_latency": 0,
        "queues": {"parked": 2, "default": 0},
        "history_processed": {time.strftime("%Y-%m-%d", time.gmtime()): 2},
        "history_failed": {time.strftime("%Y-%m-%d", time.gmtime()): 2}}


def _assert_process(fleet: Fleet):
    [process] = fleet.read["processes"]
    assert process["identity"] == fleet.identity and process["pid"] == fleet.pid
    assert process["hostname"] == fleet.identity.split(":")[0] == socket.gethostname()
    assert (process["tag"], process["queues"], process["concurrency"]) == (
        "wurk-fleet", ["default"], 3)
    assert set(process["labels"]) == {"blue", "wurk", "python"}
    assert (process["busy"], process["quiet"], process["stopping"]) == (1, "false", False)
    assert process["rss"] > 1000 and process["rtt_us"] > 0
    assert fleet.before <= process["started_at"]["epoch"] <= process["beat"]["epoch"]
    assert process["beat"]["epoch"] <= fleet.read_done
    assert fleet.read["process_totals"] == {"size": 1, "concurrency": 3,
                                            "rss": process["rss"]}
    # Sidekiq 6.4 reads busy jobs from `<identity>:workers`; Wurk writes Sidekiq 7's
    # `<identity>:work`. The count (from the process hash) is right, the list is empty.
    assert fleet.read["work_size"] == 1 and fleet.read["work"] == []


def _job_times(fleet: Fleet) -> dict:
    """Every timestamp Sidekiq showed for Wurk's jobs, by where it showed it."""
    read = fleet.read
    [retry], [scheduled], [dead] = read["retries"], read["scheduled"], read["dead"]
    times = {f"queued {j['klass']} {field}": j[field]
             for q in read["queues"] for j in q["jobs"] for field in ("created_at",
                                                                       "enqueued_at")}
    times.update({"retry created_at": retry["created_at"], "retry failed_at":
                  retry["failed_at"], "scheduled created_at": scheduled["created_at"],
                  "dead created_at": dead["created_at"], "dead failed_at": dead["failed_at"]})
    return times


def test_with_float_timestamps_sidekiq_6_shows_wurks_times_right(redis_url, redis_client,
                                                                 start_worker):
    config = Config(redis_url=redis_url, tag="tests", timestamp_format="float")
    fleet = _run_fleet(redis_url, redis_client, start_worker, config,
                       ["--timestamp-format", "float"])
    _assert_contents(fleet)
    times = _job_times(fleet)
    assert len(times) == 9
    for where, shown in times.items():
        assert fleet.before <= shown["epoch"] <= fleet.after, where
        assert shown["year"] == _year_of(fleet.before), where
    for queue in fleet.read["queues"]:
        assert 0 <= queue["latency"] <= fleet.read_done - fleet.before
    [scheduled] = fleet.read["scheduled"]
    assert scheduled["enqueued_at"] is None  # a scheduled member has none, as in Sidekiq


def test_with_the_default_ms_timestamps_sidekiq_6_dates_wurks_jobs_millennia_ahead(
        redis_url, redis_client, start_worker):
    # No setting and no flag: the default. Sidekiq 6.4 reads 1796113965123 (December 2026
    # in ms) as seconds: the year 58886. The `at` scores are seconds in every version.
    fleet = _run_fleet(redis_url, redis_client, start_worker,
                       Config(redis_url=redis_url, tag="tests"), [])
    _assert_contents(fleet)
    times = _job_times(fleet)
    assert len(times) == 9
    for where, shown in times.items():
        assert shown["year"] > FAR_FUTURE_YEAR, where
        assert fleet.before * 1000 - 1 <= shown["epoch"] <= fleet.after * 1000, where
        assert abs(shown["year"] - (1970 + shown["epoch"] / SECONDS_PER_YEAR)) <= 1, where
    # Sidekiq's queue latency (now - enqueued_at) goes hugely negative.
    [parked] = [q for q in fleet.read["queues"] if q["name"] == "parked"]
    assert parked["latency"] < -fleet.before * 998


def test_the_goldens_are_what_the_installed_sidekiq_writes(tmp_path):
    # Captures again and compares with the committed goldens: same keys, key types,
    # entry counts and, for jobs, the same fields in the same order with the same types.
    subprocess.run(["ruby", str(RUBY_DIR / "capture_goldens.rb"), str(tmp_path)], check=True,
                   capture_output=True, timeout=120,
                   env=dict(os.environ, REDIS_SERVER=redis_server_binary()))
    fresh_versions = json.loads((tmp_path / "versions.json").read_text())
    assert fresh_versions["sidekiq"] == sidekiq_version()
    if fresh_versions["sidekiq"] != golden_versions()["sidekiq"]:
        pytest.skip(f"the goldens come from Sidekiq {golden_versions()['sidekiq']}, this "
                    f"machine has {fresh_versions['sidekiq']}: compare them by hand")
    names = sorted(p.stem for p in GOLDEN_DIR.glob("*.json") if p.stem != "versions")
    assert names == sorted(p.stem for p in tmp_path.glob("*.json") if p.stem != "versions")
    for name in names:
        committed = golden(name)
        fresh = json.loads((tmp_path / f"{name}.json").read_text("utf-8"))
        assert (fresh["type"], len(fresh["entries"])) == (committed["type"],
                                                         len(committed["entries"])), name
        for ours, theirs in zip(fresh["entries"], committed["entries"]):
            if "member" in ours and ours["member"].startswith("{"):
                fresh_job, committed_job = loads(ours["member"]), loads(theirs["member"])
                assert list(fresh_job) == list(committed_job), name
                assert type_differences(fresh_job, committed_job) == {}, name
