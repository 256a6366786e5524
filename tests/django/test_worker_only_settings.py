"""A worker-only settings module, as a new project writes one (tests/workeronly/settings.py:
no ROOT_URLCONF, no TASKS): `check` and `wurk_worker` run, and say what is missing."""

import json
import subprocess
import sys

import pytest

from tests.support.workers import ROOT, wait_until, worker_env
from tests.workeronly import tasks
from wurk_django.core import keys
from wurk_django.core.config import set_default_config

WORKER_ONLY = {"DJANGO_SETTINGS_MODULE": "tests.workeronly.settings"}
MANAGE = [sys.executable, str(ROOT / "manage.py")]


@pytest.fixture(autouse=True)
def django_config():
    set_default_config(None)  # pushes from this process use tests.settings' WurkBackend
    yield
    set_default_config(None)


def test_check_passes_without_a_urlconf_and_warns_that_tasks_is_unset(redis_url):
    result = subprocess.run([*MANAGE, "check"], cwd=ROOT, capture_output=True, text=True,
                            env=worker_env(redis_url, **WORKER_ONLY), timeout=120)
    assert result.returncode == 0, result.stderr
    output = result.stdout + result.stderr
    assert "wurk.W103" in output and "tests.workeronly.tasks.total" in output
    assert "TASKS is not set" in output and "WurkBackend" in output


@pytest.mark.slow
def test_a_worker_without_tasks_fails_the_job_naming_the_setting(redis_client, start_worker):
    result = tasks.total.enqueue(2, 3)  # through tests.settings' WurkBackend
    worker = start_worker("-c", "1", require=None, command=[*MANAGE, "wurk_worker"],
                          env=WORKER_ONLY)

    def booked():
        assert worker.process.poll() is None, worker.log()
        return redis_client.zrange(keys.RETRY, 0, -1)

    (raw,) = wait_until(booked, 20, 0.05, "the job's failure to be booked for a retry")
    job = json.loads(raw)
    assert job["jid"] == result.id and job["error_class"].endswith("ConfigurationError")
    message = job["error_message"]
    assert "TASKS['default'] is " in message and "ImmediateBackend" in message
    assert "this worker's settings define no TASKS" in message
    assert "wurk_django.tasks_backend.WurkBackend" in message
