"""A job whose class no task in the worker defines fails with a hint that fits the worker:
`--require` for the Django-free CLI, an installed app's tasks.py for `manage.py wurk_worker`."""

import json
import sys

import pytest

from tests.support.workers import ROOT, wait_until
from wurk_django.core import keys
from wurk_django.core.client import Client

pytestmark = pytest.mark.slow

DJANGO_WORKER = [sys.executable, str(ROOT / "manage.py"), "wurk_worker"]


def failure_of_unknown_class(config, redis_client, worker) -> str:
    jid = Client(config).push({"class": "NoSuchJob", "args": [1]})

    def booked():
        assert worker.process.poll() is None, worker.log()
        return redis_client.zrange(keys.RETRY, 0, -1)

    (raw,) = wait_until(booked, 20, 0.05, "the unknown job's failure to be booked")
    job = json.loads(raw)
    assert job["jid"] == jid and job["error_class"].endswith("UnknownTaskError")
    return job["error_message"]


def test_the_core_cli_worker_points_at_require(config, redis_client, start_worker):
    message = failure_of_unknown_class(config, redis_client, start_worker("-q", "default"))
    assert "no task named 'NoSuchJob'" in message
    assert "--require MODULE" in message and "tasks.py" not in message


def test_the_django_worker_points_at_an_installed_apps_tasks_module(config, redis_client,
                                                                     start_worker):
    worker = start_worker("-q", "default", require=None, command=DJANGO_WORKER,
                          env={"DJANGO_SETTINGS_MODULE": "tests.settings"})
    message = failure_of_unknown_class(config, redis_client, worker)
    assert "no task named 'NoSuchJob'" in message
    assert "tasks.py module of every installed app" in message and "--require" not in message
