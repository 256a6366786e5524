"""The task API: @wurk_task, Job subclasses, the registry, .set(...) and the perform_* calls."""

import importlib
import sys
import time
from datetime import UTC, datetime, timedelta

import pytest

from wurk_django import Job, wurk_task
from wurk_django.core import JobArgumentError, WurkError, keys
from wurk_django.core.errors import DuplicateTaskError, UnknownTaskError
from wurk_django.core.payload import loads
from wurk_django.core.registry import REGISTRY
from wurk_django.core.task import DEFAULT, DISCARD, KILL, Setter, TaskFunction

CALLS = []


@wurk_task
def add_numbers(a, b):
    """Adds two numbers."""
    CALLS.append(("add_numbers", a, b))
    return a + b


@wurk_task()
def empty_parens(x):
    CALLS.append(("empty_parens", x))


@wurk_task(queue="critical", retry=5, backtrace=20, tags=["billing"], retry_queue="low")
def charge(invoice_id, currency):
    CALLS.append(("charge", invoice_id, currency))


@wurk_task(name="TaskTestRubyName", queue="ruby")
def ruby_named(*args):
    CALLS.append(("ruby_named", args))


@wurk_task
def explode(message):
    raise LookupError(message)


class BaseReport(Job):
    wurk_options = {"queue": "reports", "retry": 3}

    def perform(self, report_id):
        CALLS.append((type(self).__name__, report_id, self.jid))


class DailyReport(BaseReport):
    wurk_options = {"retry": 7, "tags": ["daily"]}


class NamedBase(Job):
    wurk_options = {"name": "TaskTestNamedBase", "queue": "named"}

    def perform(self):
        CALLS.append(("named", type(self).__name__))


class NamedChild(NamedBase):
    """Inherits NamedBase's options, but not its wire name."""


@pytest.fixture(autouse=True)
def clear_calls():
    CALLS.clear()
    yield
    CALLS.clear()


def _queued(redis_client, queue):
    return [loads(raw) for raw in redis_client.lrange(keys.queue(queue), 0, -1)]


def _scheduled(redis_client):
    return [(loads(m), s) for m, s in redis_client.zrange(keys.SCHEDULE, 0, -1, withscores=True)]


# --- definition ----------------------------------------------------------------------

def test_decorated_function_is_still_callable_directly():
    assert add_numbers(2, 3) == 5
    assert CALLS == [("add_numbers", 2, 3)]
    assert add_numbers.__name__ == "add_numbers"
    assert add_numbers.__doc__ == "Adds two numbers."
    assert add_numbers.__wrapped__.__name__ == "add_numbers"
    assert isinstance(add_numbers, TaskFunction)


def test_wire_name_is_module_and_qualname_unless_named():
    assert add_numbers.name == "tests.core.test_task.add_numbers"
    assert empty_parens.name == "tests.core.test_task.empty_parens"
    assert ruby_named.name == "TaskTestRubyName"
    assert REGISTRY.get("TaskTestRubyName") is ruby_named.job_class
    assert REGISTRY.get(add_numbers.name) is add_numbers.job_class
    assert repr(add_numbers) == "<wurk task tests.core.test_task.add_numbers>"


def test_task_options_keep_json_keys_and_drop_transient_ones():
    assert charge.job_class.resolved_options == {
        "queue": "critical", "retry": 5, "backtrace": 20, "tags": ["billing"],
        "retry_queue": "low"}
    assert "name" not in ruby_named.job_class.resolved_options
    assert ruby_named.job_class.task_options["name"] == "TaskTestRubyName"


def test_job_subclasses_inherit_wurk_options():
    assert BaseReport.wire_name == "tests.core.test_task.BaseReport"
    assert DailyReport.wire_name == "tests.core.test_task.DailyReport"
    assert DailyReport.resolved_options == {"queue": "reports", "retry": 7, "tags": ["daily"]}
    assert BaseReport.resolved_options == {"queue": "reports", "retry": 3}
    assert REGISTRY.get(DailyReport.wire_name) is DailyReport


def test_a_subclass_of_a_named_job_gets_its_own_wire_name():
    assert NamedBase.wire_name == "TaskTestNamedBase"
    assert NamedChild.wire_name == "tests.core.test_task.NamedChild"
    assert NamedChild.resolved_options == {"queue": "named"}
    assert REGISTRY.get("TaskTestNamedBase") is NamedBase


def test_registering_a_name_twice_raises():
    def first():
        pass

    def second():
        pass

    wurk_task(name="TaskTestDuplicate")(first)
    try:
        with pytest.raises(DuplicateTaskError, match="'TaskTestDuplicate' is already registered"):
            wurk_task(name="TaskTestDuplicate")(second)
        with pytest.raises(DuplicateTaskError):
            type("Other", (Job,), {"wurk_options": {"name": "TaskTestDuplicate"},
                                   "__module__": "tests.core.elsewhere"})
        assert issubclass(DuplicateTaskError, WurkError)
    finally:
        REGISTRY.unregister("TaskTestDuplicate")


def test_reimporting_the_same_module_does_not_raise(tmp_path, monkeypatch):
    module_name = "wurk_task_test_reimported_module"
    (tmp_path / f"{module_name}.py").write_text(
        "from wurk_django import Job, wurk_task\n\n"
        "@wurk_task(queue='reimport')\n"
        "def reimported(x):\n"
        "    return x\n\n"
        "class ReimportedJob(Job):\n"
        "    wurk_options = {'name': 'TaskTestReimportedJob'}\n\n"
        "    def perform(self):\n"
        "        pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        module = importlib.import_module(module_name)
        first = module.reimported.job_class
        module = importlib.reload(module)
        assert REGISTRY.get(f"{module_name}.reimported") is module.reimported.job_class
        assert module.reimported.job_class is not first
        assert REGISTRY.get("TaskTestReimportedJob") is module.ReimportedJob
    finally:
        sys.modules.pop(module_name, None)
        REGISTRY.unregister(f"{module_name}.reimported")
        REGISTRY.unregister("TaskTestReimportedJob")


def test_unknown_names_raise_unknown_task_error():
    with pytest.raises(UnknownTaskError, match="no task named 'NoSuchTaskAnywhere'"):
        REGISTRY.get("NoSuchTaskAnywhere")
    assert issubclass(UnknownTaskError, NameError)


@pytest.mark.parametrize("options, message", [
    ({"retry_in": 5}, "'retry_in' must be callable"),
    ({"retries_exhausted": "x"}, "'retries_exhausted' must be callable"),
    ({"tags": "billing"}, "'tags' must be a list"),
    ({"queue": ""}, "'queue' must be a non-empty string"),
    ({"retry_for": 1_000_000_001}, "retry_for of 1000000001 s is above the maximum"),
])
def test_bad_task_options_raise_at_definition(options, message):
    with pytest.raises(JobArgumentError, match=message):
        wurk_task(**options)(lambda: None)


def test_option_keys_must_be_strings():
    with pytest.raises(JobArgumentError, match="option keys must be str"):
        type("BadKeys", (Job,), {"wurk_options": {1: "x"}, "__module__": __name__})


def test_retry_for_timedelta_becomes_whole_seconds():
    task = wurk_task(retry_for=timedelta(hours=1, seconds=0.9))(lambda: None)
    try:
        assert task.job_class.resolved_options["retry_for"] == 3600
        assert type(task.job_class.resolved_options["retry_for"]) is int
    finally:
        REGISTRY.unregister(task.name)


def test_hook_options_become_hooks_not_payload_keys():
    def retry_in(count, exc, job):
        return 10

    def exhausted(job, exc):
        return DISCARD

    task = wurk_task(retry_in=retry_in, retries_exhausted=exhausted)(lambda: None)
    try:
        assert task.job_class.retry_in(0, None, {}) == 10
        assert task.job_class.retries_exhausted({}, None) == "discard"
        assert "retry_in" not in task.job_class.resolved_options
        assert "retries_exhausted" not in task.job_class.resolved_options
    finally:
        REGISTRY.unregister(task.name)


def test_sentinels_equal_their_strings():
    assert (DISCARD, KILL, DEFAULT) == ("discard", "kill", "default")


# --- pushing -----------------------------------------------------------------------

def test_perform_async_pushes_with_the_task_options(config, redis_client):
    jid = charge.perform_async(42, "EUR")
    [job] = _queued(redis_client, "critical")
    assert job["jid"] == jid
    assert job["class"] == "tests.core.test_task.charge"
    assert job["args"] == [42, "EUR"]
    assert (job["retry"], job["backtrace"], job["tags"], job["retry_queue"]) == \
        (5, 20, ["billing"], "low")


def test_job_class_perform_async_uses_inherited_options(config, redis_client):
    jid = DailyReport.perform_async(9)
    [job] = _queued(redis_client, "reports")
    assert (job["jid"], job["class"], job["retry"], job["tags"]) == \
        (jid, "tests.core.test_task.DailyReport", 7, ["daily"])


def test_set_overrides_options_for_one_call(config, redis_client):
    charge.set(queue="low", retry=False, retry_for=timedelta(days=1)).perform_async(1, "USD")
    [job] = _queued(redis_client, "low")
    assert job["retry"] is False
    assert job["retry_for"] == 86_400
    assert job["backtrace"] == 20  # untouched task options stay
    assert not redis_client.exists(keys.queue("critical"))
    charge.perform_async(2, "USD")  # the task's own options are unchanged
    assert len(_queued(redis_client, "critical")) == 1


def test_set_returns_a_new_setter_each_time():
    first = charge.set(queue="a")
    second = first.set(retry=1)
    assert isinstance(first, Setter)
    assert first.options == {"queue": "a"}
    assert second.options == {"queue": "a", "retry": 1}


def test_set_wait_and_wait_until_schedule_the_job(config, redis_client):
    before = time.time()
    charge.set(wait=60).perform_async(1, "EUR")
    when = datetime.now(UTC) + timedelta(hours=1)
    charge.set(wait_until=when).perform_async(2, "EUR")
    entries = sorted(_scheduled(redis_client), key=lambda e: e[1])
    assert [job["args"][0] for job, _ in entries] == [1, 2]
    assert before + 60 <= entries[0][1] <= time.time() + 60
    assert entries[1][1] == when.timestamp()
    assert all("at" not in job and "enqueued_at" not in job for job, _ in entries)


def test_set_wait_in_the_past_pushes_now(config, redis_client):
    charge.set(wait=-10).perform_async(1, "EUR")
    charge.set(wait_until=datetime(2020, 1, 1, tzinfo=UTC)).perform_async(2, "EUR")
    assert len(_queued(redis_client, "critical")) == 2
    assert not redis_client.exists(keys.SCHEDULE)


@pytest.mark.parametrize("interval, offset", [
    (90, 90), (90.5, 90.5), (timedelta(minutes=5), 300)])
def test_perform_in_relative_intervals(config, redis_client, interval, offset):
    before = time.time()
    jid = charge.perform_in(interval, 1, "EUR")
    [(job, score)] = _scheduled(redis_client)
    assert job["jid"] == jid
    assert before + offset <= score <= time.time() + offset


def test_perform_in_and_perform_at_with_absolute_times(config, redis_client):
    when = datetime.now(UTC) + timedelta(days=1)
    charge.perform_in(when, 1, "EUR")
    epoch = time.time() + 7200.25
    charge.perform_at(epoch, 2, "EUR")
    DailyReport.perform_at(when, 3)
    scores = {job["args"][0]: score for job, score in _scheduled(redis_client)}
    assert scores == {1: when.timestamp(), 2: epoch, 3: when.timestamp()}


def test_perform_in_now_or_past_enqueues_immediately(config, redis_client):
    charge.perform_in(0, 1, "EUR")
    charge.perform_at(time.time() - 5, 2, "EUR")
    assert [job["args"][0] for job in _queued(redis_client, "critical")] == [2, 1]
    assert not redis_client.exists(keys.SCHEDULE)


def test_perform_bulk_returns_one_jid_per_job(config, redis_client):
    jids = charge.perform_bulk([[1, "EUR"], [2, "USD"], [3, "GBP"]])
    assert len(set(jids)) == 3
    queued = _queued(redis_client, "critical")
    assert sorted(job["jid"] for job in queued) == sorted(jids)
    assert sorted(job["args"][0] for job in queued) == [1, 2, 3]
    assert {job["retry"] for job in queued} == {5}
    assert DailyReport.perform_bulk([[1], [2]], batch_size=1) != [None, None]
    assert len(_queued(redis_client, "reports")) == 2


def test_pushing_complex_arguments_raises_before_redis(config, redis_client):
    with pytest.raises(JobArgumentError, match="argument 1 of type builtins.tuple"):
        charge.perform_async(1, ("EUR",))
    assert redis_client.dbsize() == 0


# --- perform_inline -----------------------------------------------------------------------

class ServerRecorder:
    seen = []

    def call(self, job_instance, job, queue, next_):
        ServerRecorder.seen.append((type(job_instance).__name__, job["class"], queue))
        return next_()


class ServerHalter:
    def call(self, job_instance, job, queue, next_):
        return None


class ClientHalter:
    def call(self, job_class, job, queue, redis, next_):
        return False


def test_perform_inline_runs_now_through_server_middleware(config, redis_client):
    ServerRecorder.seen.clear()
    config.server_middleware.add(ServerRecorder)
    assert charge.perform_inline(7, "EUR") is None  # what charge returns
    assert CALLS == [("charge", 7, "EUR")]
    assert ServerRecorder.seen == [("charge", "tests.core.test_task.charge", "critical")]
    assert redis_client.dbsize() == 0


def test_perform_inline_sets_the_jid_and_round_trips_arguments(config):
    assert DailyReport.perform_inline({"id": 3}) is None  # what perform returns
    [(name, arg, jid)] = CALLS
    assert (name, arg) == ("DailyReport", {"id": 3})
    assert len(jid) == 24
    add_numbers.perform_inline(1.0, 2)
    assert type(CALLS[-1][1]) is float


def test_perform_inline_returns_none_when_client_middleware_halts(config):
    config.client_middleware.add(ClientHalter)
    assert charge.perform_inline(1, "EUR") is None
    assert CALLS == []


def test_perform_inline_returns_none_when_server_middleware_halts(config):
    config.server_middleware.add(ServerHalter)
    assert charge.perform_inline(1, "EUR") is None
    assert CALLS == []


def test_perform_inline_exceptions_reach_the_caller_and_book_no_retry(config, redis_client):
    with pytest.raises(LookupError, match="nope"):
        explode.perform_inline("nope")
    assert redis_client.dbsize() == 0


def test_perform_inline_checks_arguments(config):
    with pytest.raises(JobArgumentError):
        charge.perform_inline(1, {"when": datetime.now()})
    assert CALLS == []


def test_set_sync_true_runs_inline(config, redis_client):
    assert charge.set(sync=True).perform_async(5, "EUR") is None  # what charge returns
    assert CALLS == [("charge", 5, "EUR")]
    assert redis_client.dbsize() == 0
