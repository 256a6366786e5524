"""The client against a real Redis: push, scheduled push, bulk push, the raw dict API."""

import re
import time
from datetime import timedelta

import pytest

from wurk_django import Client, Job, wurk_task
from wurk_django.core import JobArgumentError, keys, set_default_config
from wurk_django.core.payload import loads
from wurk_django.core.redis import RedisConnection


@wurk_task(queue="critical", retry=5, backtrace=True)
def critical_task(x):
    pass


@wurk_task
def plain_task(*args):
    pass


class DailyPush(Job):
    wurk_options = {"queue": "daily"}

    def perform(self):
        pass


@wurk_task(name="ClientTestWrapped", queue="wrapped-q", retry=2)
def wrapped_target(*args):
    pass


def _queued(redis_client, queue="default"):
    """Jobs of a queue, oldest first (BRPOP takes from the right)."""
    return [loads(raw) for raw in reversed(redis_client.lrange(keys.queue(queue), 0, -1))]


def _scheduled(redis_client):
    return [(loads(m), s) for m, s in redis_client.zrange(keys.SCHEDULE, 0, -1, withscores=True)]


def _command_calls(redis_client, command):
    stats = redis_client.info("commandstats")
    return stats.get(f"cmdstat_{command}", {}).get("calls", 0)


# --- immediate push ----------------------------------------------------------------------

def test_push_writes_queues_set_and_the_queue_list(config, redis_client):
    before = time.time_ns() // 1_000_000
    jid = Client().push({"class": "SomeRubyJob", "args": [1, "x"]})
    after = time.time_ns() // 1_000_000
    assert redis_client.smembers(keys.QUEUES) == {b"default"}
    [job] = _queued(redis_client)
    assert list(job) == ["retry", "queue", "class", "args", "jid", "created_at", "enqueued_at"]
    assert job["jid"] == jid and re.fullmatch(r"[0-9a-f]{24}", jid)
    assert (job["retry"], job["queue"], job["class"], job["args"]) == \
        (True, "default", "SomeRubyJob", [1, "x"])
    assert type(job["created_at"]) is int and type(job["enqueued_at"]) is int
    assert before <= job["created_at"] <= job["enqueued_at"] <= after
    assert sorted(k.decode() for k in redis_client.keys("*")) == ["queue:default", "queues"]


def test_key_order_is_defaults_then_task_options_then_caller_keys(config, redis_client):
    critical_task.set(tags=["t"]).perform_async(3)
    [job] = _queued(redis_client, "critical")
    assert list(job) == ["retry", "queue", "backtrace", "class", "args", "tags", "jid",
                         "created_at", "enqueued_at"]
    assert (job["retry"], job["queue"], job["backtrace"]) == (5, "critical", True)


def test_lpush_keeps_fifo_order_for_brpop(config, redis_client):
    for n in range(3):
        Client().push({"class": "X", "args": [n]})
    assert [job["args"] for job in _queued(redis_client)] == [[0], [1], [2]]
    assert loads(redis_client.rpop(keys.queue("default")))["args"] == [0]


def test_caller_jid_and_created_at_are_kept(config, redis_client):
    jid = Client().push({"class": "X", "args": [], "jid": "custom-jid",
                         "created_at": 1739522580123})
    assert jid == "custom-jid"
    [job] = _queued(redis_client)
    assert (job["jid"], job["created_at"]) == ("custom-jid", 1739522580123)


def test_transient_keys_never_reach_redis(config, redis_client):
    Client().push({"class": "X", "args": [1], "pool": "p", "client_class": "C", "name": "n",
                   "sync": False, "transactional": False, "retry_in": lambda *a: 1,
                   "retries_exhausted": lambda *a: None, "cron": "* * * * *"})
    [raw] = redis_client.lrange(keys.queue("default"), 0, -1)
    job = loads(raw)
    for key in ("pool", "client_class", "name", "sync", "transactional", "retry_in",
                "retries_exhausted", "cron"):
        assert key not in job


def test_the_old_on_commit_name_is_refused_naming_transactional(config, redis_client):
    # It was an alias of `transactional`; one name only, and no silent deferral.
    with pytest.raises(JobArgumentError, match="'on_commit' is not an option; use "
                                               "'transactional'"):
        Client().push({"class": "X", "args": [1], "on_commit": False})
    assert redis_client.dbsize() == 0


def test_unknown_top_level_keys_are_kept(config, redis_client):
    Client().push({"class": "X", "args": [], "bid": "b-1", "cattr": {"user": 7},
                   "display_class": "Shown", "locale": "de", "my_custom": [1, {"a": None}]})
    [job] = _queued(redis_client)
    assert job["bid"] == "b-1" and job["cattr"] == {"user": 7}
    assert job["display_class"] == "Shown" and job["locale"] == "de"
    assert job["my_custom"] == [1, {"a": None}]


def test_a_registered_name_given_as_a_string_takes_its_task_options(config, redis_client):
    Client().push({"class": critical_task.name, "args": [1]})
    Client().push({"class": critical_task, "args": [2]})
    Client().push({"class": critical_task.job_class, "args": [3]})
    jobs = _queued(redis_client, "critical")
    assert [(j["class"], j["retry"], j["backtrace"]) for j in jobs] == \
        [("tests.core.test_client.critical_task", 5, True)] * 3


def test_caller_keys_win_over_task_options(config, redis_client):
    Client().push({"class": critical_task, "args": [1], "queue": "elsewhere", "retry": 1})
    [job] = _queued(redis_client, "elsewhere")
    assert (job["queue"], job["retry"], job["backtrace"]) == ("elsewhere", 1, True)


class AbstractBase(Job):
    _abstract = True  # a base for tasks, not one itself


def test_only_task_classes_and_task_functions_stand_for_a_task(config, redis_client):
    Client().push({"class": DailyPush, "args": []})
    Client().push({"class": critical_task, "args": [1]})
    assert [(job["class"], job["queue"]) for job in _queued(redis_client, "daily")] == [
        ("tests.core.test_client.DailyPush", "daily")]
    assert _queued(redis_client, "default") == []
    assert _queued(redis_client, "critical")[0]["class"] == "tests.core.test_client.critical_task"
    for not_a_task in (Job, AbstractBase, DailyPush(), critical_task.job_class()):
        with pytest.raises(JobArgumentError, match="must be a registered task or a name"):
            Client().push({"class": not_a_task, "args": []})


def test_wrapped_task_options_are_merged(config, redis_client):
    Client().push({"class": "Wrapper", "wrapped": "ClientTestWrapped", "args": [1]})
    [job] = _queued(redis_client, "wrapped-q")
    assert (job["class"], job["wrapped"], job["retry"]) == ("Wrapper", "ClientTestWrapped", 2)


def test_enqueue_to_a_ruby_class_takes_default_job_options(config, redis_client):
    set_default_config(config.replace(default_job_options={"backtrace": 10, "retry": 3}))
    jid = Client.enqueue_to("ruby", "HardRubyJob", 1, "two")
    [job] = _queued(redis_client, "ruby")
    assert job["jid"] == jid
    assert (job["class"], job["args"], job["queue"]) == ("HardRubyJob", [1, "two"], "ruby")
    assert (job["retry"], job["backtrace"]) == (3, 10)
    assert list(job)[:2] == ["retry", "queue"]


def test_enqueue_to_in_schedules(config, redis_client):
    before = time.time()
    jid = Client.enqueue_to_in("ruby", 120, "HardRubyJob", 1)
    [(job, score)] = _scheduled(redis_client)
    assert (job["jid"], job["queue"], job["class"]) == (jid, "ruby", "HardRubyJob")
    assert before + 120 <= score <= time.time() + 120
    Client.enqueue_to_in("ruby", -1, "HardRubyJob", 2)
    assert [job["args"] for job in _queued(redis_client, "ruby")] == [[2]]


# --- retry_for ---------------------------------------------------------------------

@pytest.mark.parametrize("value, seconds", [
    (timedelta(hours=2), 7200), (90.7, 90), (600, 600), (timedelta(seconds=1.5), 1)])
def test_retry_for_is_coerced_to_whole_seconds(config, redis_client, value, seconds):
    Client().push({"class": "X", "args": [], "retry_for": value})
    [job] = _queued(redis_client)
    assert job["retry_for"] == seconds and type(job["retry_for"]) is int


@pytest.mark.parametrize("value", [1_000_000_001, 1.5e9, timedelta(days=20_000)])
def test_retry_for_above_one_billion_seconds_is_rejected(config, redis_client, value):
    with pytest.raises(JobArgumentError, match="retry_for"):
        Client().push({"class": "X", "args": [], "retry_for": value})
    assert redis_client.dbsize() == 0


def test_retry_for_that_is_not_a_duration_is_rejected(config, redis_client):
    with pytest.raises(JobArgumentError, match="retry_for"):
        Client().push({"class": "X", "args": [], "retry_for": "a while"})


# --- structure checks -----------------------------------------------------------------------

@pytest.mark.parametrize("item, message", [
    ("not a dict", "a job must be a dict with 'class' and 'args'"),
    ({"args": [1]}, "a job must be a dict with 'class' and 'args'"),
    ({"class": "X"}, "a job must be a dict with 'class' and 'args'"),
    ({"class": "X", "args": (1,)}, "'args' must be a list, got tuple"),
    ({"class": "X", "args": "1"}, "'args' must be a list, got str"),
    ({"class": 42, "args": []}, "'class' must be a registered task or a name"),
    ({"class": "", "args": []}, "'class' must be a registered task or a name"),
    ({"class": "X", "args": [], "at": "soon"}, "'at' must be epoch seconds"),
    ({"class": "X", "args": [], "at": True}, "'at' must be epoch seconds"),
    ({"class": "X", "args": [], "tags": "a,b"}, "'tags' must be a list"),
    ({"class": "X", "args": [], 7: "x"}, "job option keys must be str"),
    ({"class": "X", "args": [], "queue": ""}, "'queue' must be a non-empty string"),
    ({"class": "X", "args": [], "queue": None}, "'queue' must be a non-empty string"),
])
def test_bad_items_raise_job_argument_error(config, redis_client, item, message):
    with pytest.raises(JobArgumentError, match=message) as info:
        Client().push(item)
    assert isinstance(info.value, TypeError) and isinstance(info.value, ValueError)
    assert redis_client.dbsize() == 0


def test_job_argument_error_can_be_caught_as_type_or_value_error(config):
    with pytest.raises(TypeError):
        Client().push({"class": "X", "args": [{1, 2}]})
    with pytest.raises(ValueError):
        Client().push({"class": "X", "args": [b"bytes"]})


def test_class_and_queue_become_strings(config, redis_client):
    # As Sidekiq's `item["queue"].to_s` and `item["class"].to_s`: a queue given as a
    # number is stored, and pushed to, by its text; a task class by its wire name.
    Client().push({"class": DailyPush, "args": [], "queue": 7})
    [job] = _queued(redis_client, "7")
    assert job["queue"] == "7" and job["class"] == DailyPush.wire_name
    assert isinstance(job["class"], str)
    assert redis_client.smembers(keys.QUEUES) == {b"7"}


# --- scheduled push -------------------------------------------------------------------

def test_scheduled_push_goes_to_the_schedule_set_without_at_or_enqueued_at(config,
                                                                           redis_client):
    at = time.time() + 3600.5
    jid = Client().push({"class": "X", "args": [1], "at": at, "enqueued_at": 1})
    [(job, score)] = _scheduled(redis_client)
    assert score == at
    assert job["jid"] == jid
    assert "at" not in job and "enqueued_at" not in job
    assert type(job["created_at"]) is int
    assert list(job) == ["retry", "queue", "class", "args", "jid", "created_at"]
    assert not redis_client.exists(keys.QUEUES)
    assert not redis_client.exists(keys.queue("default"))


# --- bulk push ---------------------------------------------------------------------------

class CountingConnection(RedisConnection):
    """A real connection that counts the command batches (round trips) pushes send."""

    def __init__(self, url):
        super().__init__(url)
        self.executions = []

    def execute_batch(self, commands):
        self.executions.append(len(commands))
        return super().execute_batch(commands)


def test_bulk_push_gives_one_jid_per_job_and_one_enqueued_at(config, redis_client):
    jids = Client().push_bulk({"class": "X", "args": [[1], [2], [3]]})
    assert len(jids) == 3 and len(set(jids)) == 3
    jobs = _queued(redis_client)
    assert [job["args"] for job in jobs] == [[1], [2], [3]]
    assert [job["jid"] for job in jobs] == jids
    assert len({job["enqueued_at"] for job in jobs}) == 1


def test_bulk_push_sends_one_pipeline_per_slice(config, redis_client):
    connection = CountingConnection(config.redis_url)
    try:
        redis_client.config_resetstat()
        jids = Client(config, connection).push_bulk(
            {"class": "X", "args": [[n] for n in range(5)], "batch_size": 2})
        assert len(jids) == 5
        # Three slices (2, 2, 1): each one pipeline of SADD + one LPUSH.
        assert connection.executions == [2, 2, 2]
        assert _command_calls(redis_client, "lpush") == 3
        assert _command_calls(redis_client, "sadd") == 3
        assert [job["args"] for job in _queued(redis_client)] == [[n] for n in range(5)]
        assert "batch_size" not in loads(redis_client.lindex(keys.queue("default"), 0))
    finally:
        connection.close()


def test_bulk_push_groups_a_slice_by_queue(config, redis_client):
    class RouteOdd:
        def call(self, job_class, job, queue, redis, next_):
            if job["args"][0] % 2:
                job["queue"] = "odd"
            return next_()

    config.client_middleware.add(RouteOdd)
    connection = CountingConnection(config.redis_url)
    try:
        redis_client.config_resetstat()
        Client(config, connection).push_bulk({"class": "X", "args": [[1], [2], [3], [4]]})
        assert connection.executions == [3]  # SADD, LPUSH queue:default, LPUSH queue:odd
        assert redis_client.smembers(keys.QUEUES) == {b"default", b"odd"}
        assert [j["args"] for j in _queued(redis_client, "odd")] == [[1], [3]]
        assert [j["args"] for j in _queued(redis_client)] == [[2], [4]]
    finally:
        connection.close()


@pytest.mark.parametrize("args", [[1, 2], "x", [[1], 2], None, ([1],)])
def test_bulk_push_needs_a_list_of_lists(config, redis_client, args):
    with pytest.raises(JobArgumentError, match="list of argument lists"):
        Client().push_bulk({"class": "X", "args": args})
    assert redis_client.dbsize() == 0


def test_bulk_push_with_one_at_schedules_every_job_at_it(config, redis_client):
    at = time.time() + 600
    jids = Client().push_bulk({"class": "X", "args": [[1], [2]], "at": at})
    entries = _scheduled(redis_client)
    assert sorted(job["jid"] for job, _ in entries) == sorted(jids)
    assert {score for _, score in entries} == {at}
    assert all("at" not in job and "enqueued_at" not in job for job, _ in entries)


def test_bulk_push_with_a_list_of_at_schedules_each_job(config, redis_client):
    now = time.time()
    at = [now + 100, now + 200, now + 300]
    jids = Client().push_bulk({"class": "X", "args": [[1], [2], [3]], "at": at})
    scores = {job["jid"]: score for job, score in _scheduled(redis_client)}
    assert [scores[jid] for jid in jids] == at


def test_bulk_push_at_list_of_the_wrong_length_raises(config, redis_client):
    with pytest.raises(JobArgumentError, match="'at' has 1 times for 2 jobs"):
        Client().push_bulk({"class": "X", "args": [[1], [2]], "at": [time.time() + 60]})
    assert redis_client.dbsize() == 0


@pytest.mark.parametrize("at", ["later", [time.time() + 60, "later"], [None, None]])
def test_bulk_push_at_must_be_numbers(config, redis_client, at):
    with pytest.raises(JobArgumentError, match="'at' must be epoch seconds"):
        Client().push_bulk({"class": "X", "args": [[1], [2]], "at": at, "batch_size": 1})
    assert redis_client.dbsize() == 0


def test_bulk_push_allows_a_jid_only_for_one_job(config, redis_client):
    with pytest.raises(JobArgumentError, match="a jid may be given only when pushing exactly one"):
        Client().push_bulk({"class": "X", "args": [[1], [2]], "jid": "mine"})
    assert Client().push_bulk({"class": "X", "args": [[1]], "jid": "mine"}) == ["mine"]


def test_bulk_push_records_none_for_halted_jobs(config, redis_client):
    class HaltTwos:
        def call(self, job_class, job, queue, redis, next_):
            if job["args"] == [2]:
                return None
            return next_()

    config.client_middleware.add(HaltTwos)
    result = Client().push_bulk({"class": "X", "args": [[1], [2], [3]]})
    assert result[1] is None and result[0] and result[2]
    assert [job["jid"] for job in _queued(redis_client)] == [result[0], result[2]]


def test_bulk_push_of_nothing_writes_nothing(config, redis_client):
    assert Client().push_bulk({"class": "X", "args": []}) == []
    assert redis_client.dbsize() == 0


def test_bulk_push_checks_each_jobs_arguments(config, redis_client):
    with pytest.raises(JobArgumentError, match="argument 0 of type builtins.set"):
        Client().push_bulk({"class": "X", "args": [[1], [{2}]]})


def test_bulk_push_rejects_a_bad_batch_size(config):
    with pytest.raises(JobArgumentError, match="batch_size must be a positive number"):
        Client().push_bulk({"class": "X", "args": [[1]], "batch_size": 0})


def test_bulk_push_of_a_non_dict_raises(config):
    with pytest.raises(JobArgumentError):
        Client().push_bulk([[1], [2]])


# --- client middleware around a push -----------------------------------------------------

def test_client_middleware_sees_the_job_and_may_change_it(config, redis_client):
    seen = []

    class Tagger:
        def call(self, job_class, job, queue, redis, next_):
            seen.append((job_class, queue, type(redis).__name__, "jid" in job,
                         "created_at" in job))
            job.setdefault("request_id", "req-1")
            return next_()

    config.client_middleware.add(Tagger)
    Client().push({"class": critical_task, "args": [1]})
    assert seen == [("tests.core.test_client.critical_task", "critical", "RedisConnection",
                     True, True)]
    [job] = _queued(redis_client, "critical")
    assert job["request_id"] == "req-1"


def test_halting_client_middleware_returns_none_and_writes_nothing(config, redis_client):
    class Halt:
        def call(self, job_class, job, queue, redis, next_):
            return False

    config.client_middleware.add(Halt)
    assert Client().push({"class": "X", "args": [1]}) is None
    assert critical_task.perform_async(1) is None
    assert redis_client.dbsize() == 0
