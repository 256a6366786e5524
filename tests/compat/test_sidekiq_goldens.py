"""Wurk's writes against payloads a real Sidekiq 6.4 wrote for the same jobs.

The goldens in tests/compat/golden/ were captured by `ruby tests/compat/ruby/capture_goldens.rb`
(versions in golden/versions.json, how-to in golden/README.md). Each test makes Wurk write
the job the capture made Sidekiq write and compares them field by field: names, order,
JSON types, and every value that does not depend on the time or the random jid.
"""

import re
import time

import pytest

from tests.compat import jobs
from tests.compat.goldens import (
    JID,
    as_seconds,
    expected_type_differences,
    golden,
    in_sidekiq_order,
    job,
    job_names,
    member,
    score,
    type_differences,
)
from tests.support.workers import wait_until
from wurk_django.core import Client, Config, keys, set_default_config
from wurk_django.core.config import get_default_config
from wurk_django.core.payload import decode_backtrace, dumps, loads
from wurk_django.core.redis import close_connections, connection_for
from wurk_django.core.retry import JobRetry, RetryHandled
from wurk_django.core.scheduled import Enqueuer
from wurk_django.core.stats import Counters, flush_counters

EPSILON_S = 0.001  # integer ms round down


@pytest.fixture(params=["float", "ms"])
def timestamp_format(request, redis_url):
    """Both forms: "float" (Sidekiq 6/7 fleets) and the default "ms" (Sidekiq 8)."""
    config = Config(redis_url=redis_url, tag="tests", timestamp_format=request.param)
    set_default_config(config)
    yield request.param
    set_default_config(None)
    close_connections()


def _queued(redis_client, queue):
    return [loads(raw) for raw in redis_client.lrange(keys.queue(queue), 0, -1)]


def _assert_like_sidekiq(ours: dict, theirs: dict, timestamp_format: str):
    assert type_differences(ours, theirs) == expected_type_differences(timestamp_format, theirs)
    assert JID.fullmatch(ours["jid"]) and JID.fullmatch(theirs["jid"])


def _assert_now(value, timestamp_format, before, after):
    assert before - EPSILON_S <= as_seconds(value, timestamp_format) <= after


# --- the codec ---------------------------------------------------------------------

@pytest.mark.parametrize("name", [n for n in job_names() if n != "float_spelling"])
def test_every_captured_job_round_trips_byte_for_byte(name):
    for index, _entry in enumerate(golden(name)["entries"]):
        raw = member(name, index).encode("utf-8")
        assert dumps(loads(raw)) == raw


def test_ruby_and_python_spell_big_floats_differently_but_read_them_alike():
    # Ruby writes 1.0e+20 where Python writes 1e+20: the same JSON number, so either
    # side reads the other's, but a float past 1e16 re-written by Wurk changes bytes.
    theirs = member("float_spelling")
    assert '"args":[1.0e+20,1.0e+16,100.0,-0.0]' in theirs
    args = loads(theirs)["args"]
    assert args == [1e20, 1e16, 100.0, -0.0] and str(args[3]) == "-0.0"
    assert dumps(args) == b"[1e+20,1e+16,100.0,-0.0]"


# --- pushes ------------------------------------------------------------------------

def test_an_immediate_push_matches_sidekiq(timestamp_format, redis_client):
    before = time.time()
    Client().push({"class": "billing.tasks.charge", "args": [42, "EUR"]})
    after = time.time()
    [ours], theirs = _queued(redis_client, "default"), job("immediate")
    assert list(ours) == list(theirs)
    _assert_like_sidekiq(ours, theirs, timestamp_format)
    for field in ("retry", "queue", "class", "args"):
        assert ours[field] == theirs[field]
    _assert_now(ours["created_at"], timestamp_format, before, after)
    assert ours["created_at"] <= ours["enqueued_at"] and theirs["created_at"] <= \
        theirs["enqueued_at"]
    assert redis_client.smembers(keys.QUEUES) == {b"default"}


def test_a_push_with_options_matches_sidekiq(timestamp_format, redis_client):
    Client().push({"class": "ReportWorker", "queue": "low", "retry": 3,
                   "tags": ["reports", "nightly"], "args": []})
    [ours], theirs = _queued(redis_client, "low"), job("options")
    assert list(ours) == list(theirs)
    _assert_like_sidekiq(ours, theirs, timestamp_format)
    assert {k: ours[k] for k in ("retry", "queue", "class", "tags", "args")} == \
        {k: theirs[k] for k in ("retry", "queue", "class", "tags", "args")}


def test_a_task_push_matches_a_sidekiq_worker_push(timestamp_format, redis_client):
    jobs.Charge.perform_async(1, "two", {"three": 3.5})
    [ours], theirs = _queued(redis_client, "compat"), job("worker_class")
    _assert_like_sidekiq(ours, theirs, timestamp_format)
    assert {k: ours[k] for k in ("retry", "queue", "class", "args")} == \
        {k: theirs[k] for k in ("retry", "queue", "class", "args")}
    assert list(theirs)[:4] == ["retry", "queue", "args", "class"]
    assert list(ours)[:4] == ["retry", "queue", "class", "args"]
    assert in_sidekiq_order(ours, worker_push=True) == list(theirs)


def test_a_scheduled_push_matches_sidekiq(timestamp_format, redis_client):
    before = time.time()
    jobs.Charge.perform_in(3600, 7)
    after = time.time()
    [(raw, ours_at)] = redis_client.zrange(keys.SCHEDULE, 0, -1, withscores=True)
    ours, theirs = loads(raw), job("scheduled")
    assert list(ours) == list(theirs)  # no `at`, no `enqueued_at` in either
    _assert_like_sidekiq(ours, theirs, timestamp_format)
    assert (ours["class"], ours["args"], ours["queue"]) == (theirs["class"], theirs["args"],
                                                            theirs["queue"])
    # The score is float epoch seconds in every Sidekiq version, whatever the job's form.
    assert type(score("scheduled")) is float
    assert before + 3600 <= ours_at <= after + 3600
    assert abs(score("scheduled") - theirs["created_at"] - 3600) < 1


def test_a_bulk_push_matches_sidekiq(timestamp_format, redis_client):
    jobs.Charge.perform_bulk([[1], [2], [3]])
    ours = _queued(redis_client, "compat")
    theirs = [job("bulk", index) for index in range(3)]
    assert [j["args"] for j in ours] == [j["args"] for j in theirs] == [[3], [2], [1]]
    for mine, sidekiqs in zip(ours, theirs):
        assert list(mine) == list(sidekiqs)
        _assert_like_sidekiq(mine, sidekiqs, timestamp_format)
    for batch in (ours, theirs):  # one created_at and one enqueued_at per call, new jids
        assert len({(j["created_at"], j["enqueued_at"]) for j in batch}) == 1
        assert len({j["jid"] for j in batch}) == 3


def _args_bytes(raw: bytes | str) -> bytes:
    raw = raw if isinstance(raw, bytes) else raw.encode("utf-8")
    return re.search(rb'"args":(.*),"jid":', raw).group(1)


def test_arguments_are_written_byte_for_byte_as_sidekiq_writes_them(timestamp_format,
                                                                    redis_client):
    # Raw UTF-8 (no \u escapes), the same escapes, 2**53 + 1 kept exact, the same floats.
    theirs = member("edge_args")
    Client().push({"class": "NotifyJob", "args": loads(theirs)["args"]})
    [raw] = redis_client.lrange(keys.queue("default"), 0, -1)
    assert _args_bytes(raw) == _args_bytes(theirs)
    assert "Grüße aus Zürich – “quoted” 🚀".encode() in _args_bytes(raw)
    assert loads(raw)["args"][2] == 2 ** 53 + 1


# --- failures ----------------------------------------------------------------------

def _fail_next(redis_client, queue, task, exc_args):
    """Fetch the next job of `queue` and fail it through Wurk's retry handler."""
    config = get_default_config()
    raw = redis_client.rpop(keys.queue(queue))

    def run():
        task().perform(*exc_args)

    with pytest.raises(RetryHandled):
        JobRetry(config, connection_for(config)).local_guard(task, raw, queue, run)


def _only(redis_client, key):
    [(raw, at)] = redis_client.zrange(key, 0, -1, withscores=True)
    return loads(raw), at


def _assert_failure_like_sidekiq(ours, theirs, timestamp_format):
    assert in_sidekiq_order(ours, worker_push=True) == list(theirs)
    for field in ("retry", "queue", "backtrace", "class", "args", "error_message",
                  "retry_count"):
        assert ours.get(field) == theirs.get(field), field
    _assert_like_sidekiq(ours, theirs, timestamp_format)


def test_a_first_failure_matches_sidekiqs_retry(timestamp_format, redis_client):
    jobs.FailingJob.perform_async("tok_visa")
    before = time.time()
    _fail_next(redis_client, "low", jobs.FailingJob, ["tok_visa"])
    after = time.time()
    (ours, ours_at), theirs = _only(redis_client, keys.RETRY), job("retry_first_failure")
    _assert_failure_like_sidekiq(ours, theirs, timestamp_format)
    assert (ours["error_class"], theirs["error_class"]) == ("ValueError", "ArgumentError")
    _assert_now(ours["failed_at"], timestamp_format, before, after)
    # Due count**4 + 15 s plus up to 10 s of jitter after the failure, in both.
    assert 15 <= ours_at - as_seconds(ours["failed_at"], timestamp_format) < 25 + 1
    assert 15 <= score("retry_first_failure") - theirs["failed_at"] < 25 + 1
    # Sidekiq writes MIME base64 (a newline each 60 characters), Wurk strict base64; each
    # reads the other's, and Sidekiq's own reader decodes Wurk's (test_sidekiq_reads_wurk).
    assert "\n" in theirs["error_backtrace"] and "\n" not in ours["error_backtrace"]
    assert any("jobs.py" in line for line in decode_backtrace(ours["error_backtrace"]))
    assert any("capture_goldens.rb" in line
               for line in decode_backtrace(theirs["error_backtrace"]))


def test_a_second_failure_matches_sidekiqs_retry(timestamp_format, redis_client):
    jobs.FailingJob.perform_async("tok_visa")
    _fail_next(redis_client, "low", jobs.FailingJob, ["tok_visa"])
    first, _ = _only(redis_client, keys.RETRY)
    redis_client.delete(keys.RETRY)
    redis_client.zadd(keys.RETRY, {dumps(first): time.time() - 1})  # due now
    client = Client()
    Enqueuer(client.config, client.connection, client).enqueue_jobs()  # the poller's path
    _fail_next(redis_client, "low", jobs.FailingJob, ["tok_visa"])
    (ours, _), theirs = _only(redis_client, keys.RETRY), job("retry_second_failure")
    _assert_failure_like_sidekiq(ours, theirs, timestamp_format)
    assert list(ours)[-1] == list(theirs)[-1] == "retried_at"
    assert ours["failed_at"] == first["failed_at"] and ours["retry_count"] == 1


def test_retry_zero_goes_dead_as_in_sidekiq(timestamp_format, redis_client):
    jobs.DoomedJob.perform_async("x")
    before = time.time()
    _fail_next(redis_client, "default", jobs.DoomedJob, ["x"])
    after = time.time()
    assert redis_client.zcard(keys.RETRY) == 0
    (ours, ours_at), theirs = _only(redis_client, keys.DEAD), job("dead")
    _assert_failure_like_sidekiq(ours, theirs, timestamp_format)
    assert (ours["error_class"], theirs["error_class"]) == ("RuntimeError", "RuntimeError")
    assert before <= ours_at <= after  # the dead score: the time of death, float seconds
    assert abs(score("dead") - theirs["failed_at"]) < 1


def test_promoting_a_sidekiq_retry_changes_only_enqueued_at(timestamp_format, redis_client):
    # A Sidekiq 6 retry that comes due in Wurk's poller is pushed back unchanged but for
    # enqueued_at, which takes Wurk's form: float seconds, or ms beside Sidekiq's floats.
    theirs = member("retry_second_failure")
    redis_client.zadd(keys.RETRY, {theirs: time.time() - 1})
    client = Client()
    before = time.time()
    Enqueuer(client.config, client.connection, client).enqueue_jobs()
    after = time.time()
    [raw] = redis_client.lrange(keys.queue("low"), 0, -1)
    pushed, original = loads(raw), loads(theirs)
    _assert_now(pushed["enqueued_at"], timestamp_format, before, after)
    assert type(pushed["created_at"]) is float  # Sidekiq's own stays as Sidekiq wrote it
    pushed["enqueued_at"] = original["enqueued_at"]
    assert dumps(pushed) == theirs.encode("utf-8")


# --- stats -------------------------------------------------------------------------

def test_counters_are_written_as_sidekiq_writes_them(config, redis_client):
    counters = Counters()
    for failed in (False, True, True, False):
        counters.record(failed)
    flush_counters(connection_for(config), counters)
    day = time.strftime("%Y-%m-%d", time.gmtime())
    for name, ours in (("stat_processed", "stat:processed"), ("stat_failed", "stat:failed")):
        [theirs] = golden(name)["entries"]
        assert redis_client.type(ours) == golden(name)["type"].encode() == b"string"
        assert re.fullmatch(rb"\d+", redis_client.get(ours))
        assert (redis_client.ttl(ours) > 0) is theirs["ttl_set"] is False
    [theirs_day] = golden("stat_processed_day")["entries"]
    assert golden("stat_processed_day")["key"].startswith("stat:processed:")
    assert redis_client.get(f"stat:processed:{day}") == b"4"
    assert (redis_client.ttl(f"stat:processed:{day}") > 0) is theirs_day["ttl_set"] is True


# --- a running worker --------------------------------------------------------------

FAST = ("--heartbeat-interval", "0.5", "--poll-interval", "0.5")
IDENTITY = re.compile(r"[^:]+:\d+:[0-9a-f]{12}")


def _value_kind(text: str) -> str:
    """What a hash field's string holds, so Wurk's and Sidekiq's can be compared."""
    for kind, pattern in (("int", r"-?\d+"), ("float", r"-?\d+\.\d+(e[-+]?\d+)?"),
                          ("bool", r"true|false"), ("json", r"\{.*\}")):
        if re.fullmatch(pattern, text):
            return kind
    return "text"


def _hash(redis_client, key) -> dict:
    return {f.decode(): v.decode() for f, v in redis_client.hgetall(key).items()}


@pytest.mark.slow
def test_a_running_worker_writes_sidekiqs_process_and_busy_hashes(config, start_worker,
                                                                  redis_client):
    jobs.Hold.perform_async("busy")
    worker = start_worker("-c", "2", "-q", "default", "-q", "low", "-g", "golden",
                          "--label", "capture", *FAST, require="tests.compat.jobs")
    wait_until(lambda: redis_client.lrange(jobs.STARTED, 0, -1) == [b"busy"], 15,
               message="the held job to start")
    [identity] = wait_until(lambda: redis_client.smembers(keys.PROCESSES), 15,
                            message="a heartbeat")
    identity = identity.decode()
    wait_until(lambda: redis_client.hget(identity, "busy") == b"1", 15, message="busy = 1")
    theirs_identity = golden("process")["key"]
    assert IDENTITY.fullmatch(identity) and IDENTITY.fullmatch(theirs_identity)
    assert golden("processes")["entries"] == [{"member": theirs_identity}]

    ours = _hash(redis_client, identity)
    theirs = {e["field"]: e["value"] for e in golden("process")["entries"]}
    # Sidekiq 7 added `concurrency` to the hash; Sidekiq 6.4's readers ignore it.
    assert set(ours) - set(theirs) == {"concurrency"} and set(theirs) <= set(ours)
    assert {f: _value_kind(ours[f]) for f in theirs} == {f: _value_kind(v)
                                                         for f, v in theirs.items()}
    assert (ours["quiet"], theirs["quiet"]) == ("false", "false")

    ours_info, theirs_info = loads(ours["info"]), loads(theirs["info"])
    assert type_differences(ours_info, theirs_info) == {
        "capsules": ("dict", "missing"), "weights": ("list", "missing"),
        "version": ("str", "missing"), "embedded": ("bool", "missing")}
    assert [f for f in ours_info if f in theirs_info] == list(theirs_info)
    assert (ours_info["tag"], ours_info["queues"], ours_info["concurrency"]) == \
        (theirs_info["tag"], theirs_info["queues"], theirs_info["concurrency"])
    assert ours_info["identity"] == identity and ours_info["pid"] == worker.pid
    assert set(theirs_info["labels"]) < set(ours_info["labels"])  # plus "wurk", "python"

    # The busy jobs: Sidekiq 6.4 keeps them in `<identity>:workers`, Sidekiq 7 and 8 in
    # `<identity>:work`, where Wurk writes them (so 6.4's WorkSet lists none of Wurk's).
    assert golden("workers")["key"] == f"{theirs_identity}:workers"
    assert redis_client.exists(f"{identity}:workers") == 0
    [(_, ours_work)] = _hash(redis_client, keys.work(identity)).items()
    [theirs_work] = [e["value"] for e in golden("workers")["entries"]]
    ours_work, theirs_work = loads(ours_work), loads(theirs_work)
    assert list(ours_work) == list(theirs_work) == ["queue", "payload", "run_at"]
    assert type_differences(ours_work, theirs_work) == {}
    assert loads(ours_work["payload"])["class"] == loads(theirs_work["payload"])["class"]
    redis_client.rpush(jobs.RELEASE, "go")
