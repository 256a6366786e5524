"""Testing modes for applications: fake records pushes, inline runs them."""

import threading
import time

import pytest

import wurk_django
from wurk_django import Job, wurk_task
from wurk_django.core import (
    ConfigurationError,
    EmptyQueueError,
    JobArgumentError,
    TestModeAlreadySetError,
    keys,
    testing_modes,
)
from wurk_django.core.testing_modes import active_mode

RAN = []


@wurk_task(queue="mail")
def send_mail(address, options):
    RAN.append(("send_mail", address, options))


@wurk_task
def countdown(n):
    RAN.append(("countdown", n))
    if n > 0:
        countdown.perform_async(n - 1)


@wurk_task
def fails(message):
    raise KeyError(message)


class ReportJob(Job):
    wurk_options = {"queue": "reports", "retry": 2}

    def perform(self, report_id):
        RAN.append(("report", report_id, self.jid))


class TestingChainRecorder:
    def call(self, job_instance, job, queue, next_):
        RAN.append(("testing-chain", job["class"]))
        return next_()


class ConfigChainRecorder:
    def call(self, job_instance, job, queue, next_):
        RAN.append(("config-chain", job["class"]))
        return next_()


@pytest.fixture(autouse=True)
def clean_testing_state():
    RAN.clear()
    yield
    wurk_django.testing.set_mode("disable")
    wurk_django.testing.queues.clear_all()
    wurk_django.testing.server_middleware.clear()
    RAN.clear()


def test_wurk_django_testing_is_the_core_object():
    assert wurk_django.testing is testing_modes.testing
    assert active_mode() == "disable"


# --- fake mode ----------------------------------------------------------------------

def test_fake_mode_records_normalised_jobs_without_touching_redis(config, redis_client):
    options = {"cc": ["a@b.c"]}
    with wurk_django.testing("fake"):
        before = time.time_ns() // 1_000_000
        jid = send_mail.perform_async("x@y.z", options)
    options["cc"].append("mutated after the push")
    assert redis_client.dbsize() == 0
    [job] = send_mail.jobs()
    assert job["jid"] == jid
    assert list(job) == ["retry", "queue", "class", "args", "jid", "created_at", "enqueued_at"]
    assert (job["queue"], job["class"], job["retry"]) == \
        ("mail", "tests.core.test_testing_modes.send_mail", True)
    assert job["args"] == ["x@y.z", {"cc": ["a@b.c"]}]  # a JSON copy, not the caller's dict
    assert type(job["enqueued_at"]) is int and job["enqueued_at"] >= before
    assert RAN == []


def test_fake_mode_keeps_scheduled_jobs_with_at_and_does_not_delay_them(config, redis_client):
    with wurk_django.testing("fake"):
        before = time.time()
        send_mail.perform_in(3600, "later@x.y", {})
        [job] = send_mail.jobs()
        assert job["at"] >= before + 3600
        assert "enqueued_at" not in job
        assert send_mail.drain() == 1
    assert RAN == [("send_mail", "later@x.y", {})]
    assert redis_client.dbsize() == 0


def test_fake_mode_runs_client_middleware_and_argument_checks(config, redis_client):
    class Stamp:
        def call(self, job_class, job, queue, redis, next_):
            job["stamped"] = True
            return next_()

    class HaltReports:
        def call(self, job_class, job, queue, redis, next_):
            return None if queue == "reports" else next_()

    config.client_middleware.add(Stamp)
    config.client_middleware.add(HaltReports)
    with wurk_django.testing("fake"):
        send_mail.perform_async("a", {})
        assert ReportJob.perform_async(1) is None
        with pytest.raises(JobArgumentError):
            send_mail.perform_async("a", {"when": {1, 2}})
    assert [job["stamped"] for job in send_mail.jobs()] == [True]
    assert ReportJob.jobs() == []
    assert redis_client.dbsize() == 0


def test_jobs_by_queue_and_by_class(config):
    with wurk_django.testing("fake"):
        send_mail.perform_async("a", {})
        ReportJob.perform_async(1)
        ReportJob.perform_async(2)
    by_queue = wurk_django.testing.queues.jobs_by_queue
    assert sorted(by_queue) == ["mail", "reports"]
    assert [job["args"] for job in by_queue["reports"]] == [[1], [2]]
    by_class = wurk_django.testing.queues.jobs_by_class
    assert len(by_class["tests.core.test_testing_modes.ReportJob"]) == 2
    assert len(by_class["tests.core.test_testing_modes.send_mail"]) == 1


def test_clear_removes_one_class_and_clear_all_everything(config):
    with wurk_django.testing("fake"):
        send_mail.perform_async("a", {})
        ReportJob.perform_async(1)
    send_mail.clear()
    assert send_mail.jobs() == []
    assert len(ReportJob.jobs()) == 1
    Job.clear_all()
    assert wurk_django.testing.queues.jobs_by_queue == {}


def test_drain_runs_jobs_pushed_while_draining(config):
    with wurk_django.testing("fake"):
        countdown.perform_async(3)
        assert countdown.drain() == 4
        assert countdown.jobs() == []
    assert RAN == [("countdown", 3), ("countdown", 2), ("countdown", 1), ("countdown", 0)]


def test_drain_only_runs_its_own_class(config):
    with wurk_django.testing("fake"):
        send_mail.perform_async("a", {})
        ReportJob.perform_async(1)
        assert ReportJob.drain() == 1
    assert [entry[0] for entry in RAN] == ["report"]
    assert len(send_mail.jobs()) == 1


def test_perform_one_runs_the_oldest_job_and_raises_when_empty(config):
    with wurk_django.testing("fake"):
        ReportJob.perform_async(1)
        ReportJob.perform_async(2)
        ReportJob.perform_one()
        assert [r[1] for r in RAN] == [1]
        assert [job["args"] for job in ReportJob.jobs()] == [[2]]
        ReportJob.perform_one()
        with pytest.raises(EmptyQueueError, match="no tests.core.test_testing_modes.ReportJob"):
            ReportJob.perform_one()
        with pytest.raises(EmptyQueueError):
            countdown.perform_one()


def test_perform_one_sets_the_jid_from_the_recorded_job(config):
    with wurk_django.testing("fake"):
        jid = ReportJob.perform_async(5)
        ReportJob.perform_one()
    assert RAN == [("report", 5, jid)]


def test_drain_all_runs_every_class_including_new_pushes(config):
    with wurk_django.testing("fake"):
        send_mail.perform_async("a", {})
        ReportJob.perform_async(1)
        countdown.perform_async(1)
        assert Job.drain_all() == 4
        assert wurk_django.testing.drain_all() == 0
    assert sorted(entry[0] for entry in RAN) == ["countdown", "countdown", "report", "send_mail"]


def test_helpers_use_the_testing_server_chain(config):
    wurk_django.testing.server_middleware.add(TestingChainRecorder)
    config.server_middleware.add(ConfigChainRecorder)
    with wurk_django.testing("fake"):
        ReportJob.perform_async(1)
        ReportJob.drain()
    assert RAN[0] == ("testing-chain", "tests.core.test_testing_modes.ReportJob")
    assert ("config-chain", "tests.core.test_testing_modes.ReportJob") not in RAN


def test_process_job_runs_a_given_job(config):
    ReportJob.process_job({"class": ReportJob.wire_name, "args": [8], "jid": "j" * 24,
                           "queue": "reports"})
    send_mail.process_job({"class": send_mail.name, "args": ["p", {}], "queue": "mail"})
    assert RAN == [("report", 8, "j" * 24), ("send_mail", "p", {})]


def test_draining_a_failing_job_raises_and_books_no_retry(config, redis_client):
    with wurk_django.testing("fake"):
        fails.perform_async("boom")
        with pytest.raises(KeyError):
            fails.drain()
    assert redis_client.dbsize() == 0


# --- inline mode -------------------------------------------------------------------

def test_inline_mode_runs_at_push_through_the_testing_chain(config, redis_client):
    wurk_django.testing.server_middleware.add(TestingChainRecorder)
    config.server_middleware.add(ConfigChainRecorder)
    with wurk_django.testing("inline"):
        jid = ReportJob.perform_async(3)
        later_jid = ReportJob.perform_in(600, 4)
    assert len(jid) == 24 and len(later_jid) == 24
    assert RAN == [("testing-chain", ReportJob.wire_name), ("report", 3, jid),
                   ("testing-chain", ReportJob.wire_name), ("report", 4, later_jid)]
    assert redis_client.dbsize() == 0
    assert ReportJob.jobs() == []


def test_inline_mode_passes_arguments_through_json(config):
    with wurk_django.testing("inline"):
        send_mail.perform_async("a", {"n": 1.0})
    [(_, _, options)] = RAN
    assert type(options["n"]) is float


def test_inline_mode_exceptions_reach_the_caller(config, redis_client):
    with wurk_django.testing("inline"):
        with pytest.raises(KeyError, match="boom"):
            fails.perform_async("boom")
    assert redis_client.dbsize() == 0


def test_inline_mode_bulk_push_runs_every_job(config, redis_client):
    with wurk_django.testing("inline"):
        jids = ReportJob.perform_bulk([[1], [2]])
    assert [r[1:] for r in RAN] == [(1, jids[0]), (2, jids[1])]
    assert redis_client.dbsize() == 0


# --- selecting the mode -----------------------------------------------------------------

def test_a_block_inside_a_block_raises():
    with wurk_django.testing("fake"):
        with pytest.raises(TestModeAlreadySetError, match="already in testing mode 'fake'"):
            with wurk_django.testing("inline"):
                pass
        assert active_mode() == "fake"
    assert active_mode() == "disable"


def test_the_block_mode_is_reset_after_an_exception():
    with pytest.raises(RuntimeError):
        with wurk_django.testing("inline"):
            raise RuntimeError()
    assert active_mode() == "disable"
    with wurk_django.testing("fake"):
        assert active_mode() == "fake"


def test_unknown_modes_are_rejected():
    with pytest.raises(ConfigurationError, match="unknown testing mode 'mock'"):
        wurk_django.testing("mock")
    with pytest.raises(ConfigurationError):
        wurk_django.testing.set_mode("mock")


def _mode_in_thread():
    seen = []
    thread = threading.Thread(target=lambda: seen.append(active_mode()))
    thread.start()
    thread.join()
    return seen[0]


def test_the_block_mode_is_thread_local(config, redis_client):
    with wurk_django.testing("fake"):
        assert _mode_in_thread() == "disable"
        pushed = []
        thread = threading.Thread(target=lambda: pushed.append(ReportJob.perform_async(1)))
        thread.start()
        thread.join()
    # The other thread pushed for real.
    assert redis_client.llen(keys.queue("reports")) == 1
    assert ReportJob.jobs() == []


def test_set_mode_is_global_and_a_block_overrides_it(config, redis_client):
    wurk_django.testing.set_mode("fake")
    assert active_mode() == "fake"
    assert _mode_in_thread() == "fake"
    with wurk_django.testing("inline"):
        assert active_mode() == "inline"
        assert _mode_in_thread() == "fake"
    assert active_mode() == "fake"
    ReportJob.perform_async(1)
    assert len(ReportJob.jobs()) == 1
    wurk_django.testing.set_mode("disable")
    ReportJob.perform_async(2)
    assert redis_client.llen(keys.queue("reports")) == 1
