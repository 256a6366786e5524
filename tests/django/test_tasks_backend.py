"""Django's tasks API on Wurk: `@task` functions enqueued through Django, run by real
`manage.py wurk_worker` processes, results read back through Django."""

import asyncio
import enum
import json
import signal
import sys
from datetime import timedelta

import pytest
from django.core.checks import run_checks
from django.core.exceptions import ImproperlyConfigured
from django.db import transaction
from django.test import override_settings
from django.utils import timezone

from tests.djangoapp import django_tasks as tasks
from tests.support.workers import ROOT, wait_until
from wurk_django.core import keys
from wurk_django.core.api import DeadSet, RetrySet
from wurk_django.core.config import get_default_config, set_default_config

try:
    from django.tasks import TaskResultStatus, default_task_backend, task_backends
    from django.tasks.exceptions import InvalidTask, TaskResultDoesNotExist
    from django.tasks.signals import task_enqueued
except ImportError:  # Django 5.2 with the django-tasks backport
    from django_tasks import TaskResultStatus, default_task_backend, task_backends
    from django_tasks.exceptions import InvalidTaskError as InvalidTask
    from django_tasks.exceptions import TaskResultDoesNotExist
    from django_tasks.signals import task_enqueued

MANAGE = [sys.executable, str(ROOT / "manage.py"), "wurk_worker"]
DJANGO_ENV = {"DJANGO_SETTINGS_MODULE": "tests.settings"}
WRAPPER = "wurk_django.tasks_backend.TaskWrapper"
ONE_DAY_S = 86_400


@pytest.fixture(autouse=True)
def django_config():
    set_default_config(None)  # rebuilt from tests.settings: WURK_REDIS_URL, on-commit pushes
    yield
    set_default_config(None)


@pytest.fixture
def start_django_worker(start_worker):
    def start(*args):
        return start_worker("-c", "2", *args, require=None, command=MANAGE, env=DJANGO_ENV)
    return start


def finished(result, timeout_s: float = 20):
    """Refresh `result` until it is SUCCESSFUL or FAILED."""
    def done():
        result.refresh()
        return result.is_finished
    wait_until(done, timeout_s, 0.05, f"task result {result.id} to finish")
    return result


def ready_after_failures(result, count: int, timeout_s: float = 20):
    """Refresh `result` until `count` attempts failed and it waits for a retry."""
    def waiting():
        result.refresh()
        return result.status == TaskResultStatus.READY and len(result.errors) == count
    wait_until(waiting, timeout_s, 0.05, f"{count} failed attempts of {result.id}")
    return result


def booked_retry(result):
    """The job's entry in `retry`: the hook records READY just before Wurk adds it."""
    return wait_until(lambda: RetrySet().find_job(result.id), 10, 0.05, "the booked retry")


def queued(redis_client, queue: str = "default") -> list[dict]:
    return [json.loads(raw) for raw in redis_client.lrange(keys.queue(queue), 0, -1)]


def result_ttl(redis_client, result) -> int:
    return redis_client.ttl(keys.task_result(result.id))


# --- enqueue: the wire envelope and the READY result ---------------------------------

def test_enqueue_pushes_the_envelope_and_returns_a_ready_result(redis_client):
    seen = []

    def receiver(sender, task_result, **kwargs):
        seen.append(task_result.id)

    task_enqueued.connect(receiver)
    try:
        result = tasks.report.enqueue("sales", pages=3)
    finally:
        task_enqueued.disconnect(receiver)
    assert result.status == TaskResultStatus.READY and not result.is_finished
    assert len(result.id) == 24 and seen == [result.id]
    assert result.args == ["sales"] and result.kwargs == {"pages": 3}
    assert abs((timezone.now() - result.enqueued_at).total_seconds()) < 5
    [job] = queued(redis_client, "reports")
    path = "tests.djangoapp.django_tasks.report"
    assert job["class"] == WRAPPER and job["wrapped"] == job["display_class"] == path
    assert job["queue"] == "reports" and job["jid"] == result.id and job["retry"] == 1
    assert job["args"] == [{"task": path, "args": ["sales"], "kwargs": {"pages": 3},
                            "backend": "default", "queue_name": "reports", "priority": 0}]
    assert "at" not in job and "transactional" not in job
    stored = tasks.report.get_result(result.id)
    assert stored.status == TaskResultStatus.READY and stored.kwargs == {"pages": 3}
    assert stored.enqueued_at == result.enqueued_at
    assert ONE_DAY_S - 5 < result_ttl(redis_client, result) <= ONE_DAY_S


def test_arguments_follow_djangos_json_rules(redis_client):
    class Colour(str, enum.Enum):  # noqa: UP042 - the (str, Enum) mix-in applications write
        RED = "red"

    result = tasks.echo.enqueue((1, 2), Colour.RED, data=b"bytes")
    [job] = queued(redis_client)
    assert job["args"][0]["args"] == [[1, 2], "red"]
    assert job["args"][0]["kwargs"] == {"data": "bytes"}
    assert result.args == [[1, 2], "red"]
    with pytest.raises(TypeError):
        tasks.echo.enqueue(object())
    with pytest.raises(ValueError):
        tasks.echo.enqueue(float("nan"))
    assert len(queued(redis_client)) == 1


def test_unknown_result_id_raises_does_not_exist():
    missing = "0" * 24
    with pytest.raises(TaskResultDoesNotExist):
        tasks.add.get_result(missing)
    with pytest.raises(TaskResultDoesNotExist):
        default_task_backend.get_result(missing)
    with pytest.raises(TaskResultDoesNotExist):
        asyncio.run(tasks.add.aget_result(missing))


def test_queue_name_must_be_one_of_the_backends_queues():
    with pytest.raises(InvalidTask):
        tasks.add.using(queue_name="elsewhere")


@pytest.mark.parametrize("use_tz", [True, False])
def test_run_after_must_be_a_datetime_as_djangos_api_says(settings, redis_client, use_tz):
    settings.USE_TZ = use_tz
    with pytest.raises(InvalidTask, match=r"run_after must be a datetime.*got timedelta"):
        tasks.add.using(run_after=timedelta(minutes=5)).enqueue(1, 2)
    assert redis_client.zcard(keys.SCHEDULE) == 0


def test_a_naive_run_after_is_taken_in_local_time_without_use_tz(settings, redis_client):
    settings.USE_TZ = False
    when = timezone.now() + timedelta(minutes=5)  # naive, in TIME_ZONE
    result = tasks.add.using(run_after=when).enqueue(1, 2)
    [(member, score)] = redis_client.zrange(keys.SCHEDULE, 0, -1, withscores=True)
    assert json.loads(member)["jid"] == result.id
    assert score == pytest.approx(when.timestamp(), abs=0.001)
    assert tasks.add.get_result(result.id).task.run_after == when.replace(
        microsecond=when.microsecond // 1000 * 1000)


def test_priority_is_validated_and_stored_but_orders_nothing(redis_client):
    result = tasks.add.using(priority=10).enqueue(1, 2)
    [job] = queued(redis_client)
    assert job["args"][0]["priority"] == 10 and "priority" not in job
    assert tasks.add.get_result(result.id).task.priority == 10
    with pytest.raises(InvalidTask):
        tasks.add.using(priority=101)


# --- results kept in Redis for a TTL -----------------------------------------------

def test_result_ttl_comes_from_options_or_the_wurk_setting(redis_client):
    once = tasks.add.using(backend="once").enqueue(1, 2)
    assert 595 < result_ttl(redis_client, once) <= 600
    with override_settings(WURK={"QUEUES": ["default"], "RESULT_TTL": 1234}):
        result = tasks.add.enqueue(1, 2)
    assert 1229 < result_ttl(redis_client, result) <= 1234


@pytest.mark.slow
def test_each_write_refreshes_the_ttl(redis_client, start_django_worker):
    result = tasks.add.using(backend="once").enqueue(20, 22)
    redis_client.expire(keys.task_result(result.id), 100)
    start_django_worker("-q", "default")
    assert finished(result).return_value == 42
    assert 595 < result_ttl(redis_client, result) <= 600


# --- running on real workers -------------------------------------------------------

@pytest.mark.slow
def test_a_worker_runs_the_task_and_the_result_is_successful(redis_client,
                                                             start_django_worker):
    result = tasks.add.enqueue(2, 3)
    keywords = tasks.echo.enqueue(1, "two", flag=True, nested={"k": [1, None]})
    worker = start_django_worker("-q", "default")
    finished(result)
    assert result.status == TaskResultStatus.SUCCESSFUL and result.return_value == 5
    assert result.attempts == 1 and result.errors == []
    [worker_id] = result.worker_ids
    assert f":{worker.pid}:" in worker_id  # the Wurk process identity
    assert result.enqueued_at <= result.started_at <= result.finished_at
    assert result.last_attempted_at == result.started_at
    again = tasks.add.get_result(result.id)
    assert again.return_value == 5 and again.task.func is tasks.add.func
    assert task_backends["default"].get_result(result.id).status == TaskResultStatus.SUCCESSFUL
    assert finished(keywords).return_value == {"args": [1, "two"],
                                               "kwargs": {"flag": True,
                                                          "nested": {"k": [1, None]}}}
    assert queued(redis_client) == []


@pytest.mark.slow
def test_a_raising_task_is_failed_with_its_class_and_traceback(redis_client,
                                                               start_django_worker):
    result = tasks.explode_once.enqueue("kaboom")
    start_django_worker("-q", "default")
    finished(result)
    assert result.status == TaskResultStatus.FAILED and result.attempts == 1
    [error] = result.errors
    assert error.exception_class_path == "tests.djangoapp.django_tasks.TaskBoom"
    assert error.exception_class is tasks.TaskBoom
    assert "raise TaskBoom(message)" in error.traceback
    assert error.traceback.rstrip().endswith("TaskBoom: kaboom")
    assert result.finished_at >= result.started_at
    with pytest.raises(ValueError):
        _ = result.return_value
    # RETRY False: no retry and no dead entry, as Wurk's `retry: false`.
    assert RetrySet().size == 0 and DeadSet().size == 0


@pytest.mark.slow
def test_a_booked_retry_reads_ready_and_exhaustion_reads_failed(redis_client,
                                                                start_django_worker):
    result = tasks.explode.enqueue("again")  # the default backend has RETRY 1
    start_django_worker("-q", "default")
    ready_after_failures(result, 1)
    assert result.attempts == 1 and result.finished_at is None
    assert result.errors[0].exception_class is tasks.TaskBoom
    # Kept for the TTL after the retry is due, not just for the TTL.
    assert result_ttl(redis_client, result) > ONE_DAY_S
    entry = booked_retry(result)
    assert entry.item["retry_count"] == 0
    entry.add_to_queue()  # run the retry now instead of in 15-25 s
    finished(result)
    assert result.status == TaskResultStatus.FAILED and result.attempts == 2
    assert [e.exception_class_path for e in result.errors] == [
        "tests.djangoapp.django_tasks.TaskBoom"] * 2
    # The hook records FAILED just before Wurk adds the job to `dead`.
    wait_until(lambda: DeadSet().find_job(result.id), 10, 0.05, "the job in the dead set")


@pytest.mark.slow
def test_a_retry_that_succeeds_keeps_the_earlier_error(redis_client, start_django_worker):
    result = tasks.flaky.enqueue(2)
    start_django_worker("-q", "default")
    ready_after_failures(result, 1)
    booked_retry(result).add_to_queue()
    finished(result)
    assert result.status == TaskResultStatus.SUCCESSFUL and result.return_value == 2
    assert result.attempts == 2 and len(result.errors) == 1
    assert "attempt 1 failed" in result.errors[0].traceback
    assert result.last_attempted_at > result.started_at


@pytest.mark.slow
def test_an_unserialisable_return_value_fails_the_task(start_django_worker):
    result = tasks.unserialisable.using(backend="once").enqueue()
    start_django_worker("-q", "default")
    finished(result)
    assert result.status == TaskResultStatus.FAILED
    assert result.errors[0].exception_class_path == "builtins.TypeError"


@pytest.mark.slow
def test_takes_context_receives_the_attempt_and_the_result_id(start_django_worker):
    result = tasks.describe_attempt.enqueue("ctx")
    start_django_worker("-q", "default")
    assert finished(result).return_value == {"attempt": 1, "id": result.id, "label": "ctx"}


@pytest.mark.slow
def test_queue_name_routes_to_that_wurk_queue(redis_client, start_django_worker):
    by_decorator = tasks.report.enqueue("q3")
    by_using = tasks.add.using(queue_name="reports").enqueue(1, 1)
    assert [job["jid"] for job in queued(redis_client, "reports")] == [by_using.id,
                                                                       by_decorator.id]
    assert queued(redis_client, "default") == []
    start_django_worker("-q", "reports")
    assert finished(by_decorator).return_value == {"name": "q3", "pages": 1}
    assert finished(by_using).return_value == 2
    assert by_using.task.queue_name == tasks.add.get_result(by_using.id).task.queue_name


@pytest.mark.slow
def test_a_worker_without_q_serves_the_queues_of_the_task_backends(start_django_worker):
    # WURK["QUEUES"] is ["default"]; "reports" is only in TASKS["default"]["QUEUES"].
    result = tasks.report.enqueue("by default")
    worker = start_django_worker()
    assert finished(result).return_value == {"name": "by default", "pages": 1}
    worker.wait_for_log("also serving the django.tasks queue(s) 'reports' (TASKS['default'])")


@pytest.mark.slow
def test_a_worker_told_its_queues_names_the_task_queues_it_leaves_out(start_django_worker):
    worker = start_django_worker("-q", "default")
    worker.wait_for_log("not serving the django.tasks queue(s) 'reports' (TASKS['default'])")
    assert "add -q reports" in worker.log()


@pytest.mark.slow
def test_run_after_waits_in_the_schedule_set_then_runs(redis_client, start_django_worker):
    when = timezone.now() + timedelta(seconds=2)
    result = tasks.add.using(run_after=when).enqueue(3, 4)
    assert queued(redis_client) == []
    [(member, score)] = redis_client.zrange(keys.SCHEDULE, 0, -1, withscores=True)
    assert score == pytest.approx(when.timestamp(), abs=0.001)
    job = json.loads(member)
    assert job["jid"] == result.id and "at" not in job and job["class"] == WRAPPER
    stored = tasks.add.get_result(result.id)
    assert stored.status == TaskResultStatus.READY
    assert abs((stored.task.run_after - when).total_seconds()) < 0.001
    assert result_ttl(redis_client, result) > ONE_DAY_S  # kept a day after it is due
    start_django_worker("-q", "default")
    finished(result, timeout_s=40)  # the poller's first pass comes 10-15 s after start
    assert result.return_value == 7 and result.started_at >= when


@pytest.mark.slow
def test_aenqueue_and_aget_result(start_django_worker):
    async def enqueue():
        return await tasks.add.aenqueue(4, 5), await tasks.async_double.aenqueue(21)

    plain, coroutine = asyncio.run(enqueue())
    start_django_worker("-q", "default")

    def done(result):
        return asyncio.run(tasks.add.aget_result(result.id) if result is plain
                           else tasks.async_double.aget_result(result.id)).is_finished

    wait_until(lambda: done(plain) and done(coroutine), 20, 0.05, "both async results")
    assert asyncio.run(tasks.add.aget_result(plain.id)).return_value == 9

    async def refresh():
        await coroutine.arefresh()
        return coroutine

    assert asyncio.run(refresh()).return_value == 42


@pytest.mark.slow
def test_a_hard_shutdown_requeues_and_the_result_is_ready_again(redis_client,
                                                                start_django_worker):
    result = tasks.stall.enqueue(30)
    worker = start_django_worker("-q", "default", "-t", "1")

    def running():
        result.refresh()
        return result.status == TaskResultStatus.RUNNING
    wait_until(running, 20, 0.05, "the task to start")
    worker.send(signal.SIGTERM)
    worker.wait(20)
    result.refresh()
    assert result.status == TaskResultStatus.READY and result.attempts == 1
    assert result.errors == [] and result.finished_at is None
    assert [job["jid"] for job in queued(redis_client)] == [result.id]


# --- transactions ------------------------------------------------------------------

@pytest.mark.django_db(transaction=True)
def test_enqueue_inside_atomic_waits_for_the_commit(redis_client):
    with transaction.atomic():
        result = tasks.add.enqueue(1, 2)
        assert result.status == TaskResultStatus.READY and len(result.id) == 24
        assert queued(redis_client) == []
        assert not redis_client.exists(keys.task_result(result.id))
        with pytest.raises(TaskResultDoesNotExist):
            result.refresh()
    assert [job["jid"] for job in queued(redis_client)] == [result.id]
    result.refresh()
    assert result.status == TaskResultStatus.READY


@pytest.mark.django_db(transaction=True)
def test_enqueue_is_dropped_on_rollback(redis_client):
    with pytest.raises(RuntimeError):
        with transaction.atomic():
            result = tasks.add.enqueue(1, 2)
            raise RuntimeError("order failed")
    assert queued(redis_client) == []
    with pytest.raises(TaskResultDoesNotExist):
        tasks.add.get_result(result.id)


# --- system checks -----------------------------------------------------------------

WURK_BACKEND = "wurk_django.tasks_backend.WurkBackend"


def wurk_messages():
    return sorted((m.id, m.msg) for m in run_checks(tags=["wurk"])
                  if m.id.startswith("wurk.E1"))


def test_the_test_settings_pass_the_checks():
    assert wurk_messages() == []


def test_misconfigured_entries_fail_the_checks():
    bad = {"default": {"BACKEND": WURK_BACKEND},
           "bad": {"BACKEND": WURK_BACKEND, "QUEUES": "default",
                   "OPTIONS": {"RESULT_TTL": 0, "RETRY": -1, "TRANSACTONAL": True}},
           "commas": {"BACKEND": WURK_BACKEND, "QUEUES": ["low,2"]},
           "other": {"BACKEND": "no.such.Backend", "OPTIONS": {"ANYTHING": 1}}}
    with override_settings(TASKS=bad):
        messages = wurk_messages()
    assert [m[0] for m in messages] == ["wurk.E101"] * 3 + ["wurk.E102"] * 2
    assert all(m[1].startswith(("TASKS['bad']", "TASKS['commas']")) for m in messages)
    assert any("'TRANSACTONAL'" in m[1] for m in messages)


def test_a_misconfigured_backend_refuses_to_enqueue(redis_client):
    broken = {"default": {"BACKEND": WURK_BACKEND},
              "broken": {"BACKEND": WURK_BACKEND, "OPTIONS": {"RESULT_TTL": "a day"}}}
    with override_settings(TASKS=broken):
        with pytest.raises(ImproperlyConfigured, match="RESULT_TTL"):
            tasks.add.using(backend="broken").enqueue(1, 2)
    assert queued(redis_client) == []


class HaltEveryPush:
    def call(self, job_class, job, queue, redis, next_):
        return None


def test_a_push_halted_by_client_middleware_leaves_no_result(redis_client):
    get_default_config().client_middleware.add(HaltEveryPush)  # reset by django_config
    result = tasks.add.enqueue(1, 2)
    assert result.status == TaskResultStatus.READY
    assert queued(redis_client) == []
    with pytest.raises(TaskResultDoesNotExist):
        result.refresh()
