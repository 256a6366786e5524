"""`manage.py wurk_worker` as users run it: flags, banner, errors, the ORM from threads."""

import json
import re
import signal
import subprocess
import sys
from datetime import datetime

import pytest

from tests.djangoapp.models import Order
from tests.djangoapp.tasks import mark_order, take_time
from tests.support.workers import ROOT, wait_until, worker_env
from wurk_django.core import keys
from wurk_django.core.config import set_default_config

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

MANAGE = [sys.executable, str(ROOT / "manage.py"), "wurk_worker"]
DJANGO_ENV = {"DJANGO_SETTINGS_MODULE": "tests.settings"}


@pytest.fixture
def start_django_worker(start_worker):
    def start(*args, env=None):
        return start_worker(*args, require=None, command=MANAGE, env={**DJANGO_ENV, **(env or {})})
    return start


@pytest.fixture(autouse=True)
def django_config():
    set_default_config(None)
    yield
    set_default_config(None)


def test_tasks_use_the_orm_from_several_worker_threads(start_django_worker, redis_client):
    orders = [Order.objects.create(number=n) for n in range(30)]
    for order in orders:
        mark_order.perform_async(order.id, f"done-{order.number}")
    worker = start_django_worker("-c", "5", "-q", "django")
    wait_until(lambda: Order.objects.filter(note__startswith="done-").count() == 30, 30,
               message="every order updated by the worker")
    assert {o.note for o in Order.objects.all()} == {f"done-{n}" for n in range(30)}
    # Log lines are written in batches by the worker's log thread: wait for them.
    log = wait_until(lambda: worker.log().count(" INFO: done") == 30 and worker.log(), 10,
                     message="thirty done lines")
    threads = {line.split("tid=")[1].split()[0] for line in log.splitlines()
               if " INFO: done" in line}
    assert len(threads) > 1
    assert redis_client.get(keys.STAT_FAILED) in (None, b"0")


def test_flags_override_settings_and_the_banner_says_so(start_django_worker, redis_client,
                                                         redis_url):
    masked_url = redis_url.replace("redis://", "redis://:hunter2@")
    worker = start_django_worker("-c", "3", "-q", "critical,2", "-q", "django", "-t", "4",
                                 "--tag", "flagged", "--label", "blue",
                                 env={"WURK_REDIS_URL": masked_url})
    worker.wait_for_log("Wurk 0.1.0 starting")
    banner = next(line for line in worker.log().splitlines() if "starting" in line)
    assert "3 threads on critical,2, django (weighted)" in banner
    assert "fetch reliable" in banner
    assert "hunter2" not in banner and ":****@127.0.0.1" in banner
    [identity] = wait_until(lambda: redis_client.smembers(keys.PROCESSES), 15, message="beat")
    info = json.loads(redis_client.hget(identity, "info"))
    assert info["tag"] == "flagged" and "blue" in info["labels"]
    assert info["concurrency"] == 3
    worker.send(signal.SIGTERM)
    assert worker.wait(15) == 0


def test_json_log_format_carries_jid_class_and_elapsed(start_django_worker, redis_client):
    order = Order.objects.create(number=1)
    jid = mark_order.perform_async(order.id, "json")
    timed = take_time.perform_async(0.25)
    worker = start_django_worker("-q", "django", "--log-format", "json")
    wait_until(lambda: worker.log().count('"msg": "done"') == 2, 20, message="two done lines")
    lines = [json.loads(line) for line in worker.log().splitlines() if line.startswith("{")]
    by_job = {(line["ctx"].get("jid"), line["msg"]): line for line in lines}
    done = by_job[jid, "done"]
    assert done["ctx"]["class"] == mark_order.name
    # The elapsed time is the job's run in seconds, to the millisecond as Sidekiq rounds
    # it: at least the 0.25 s the job sleeps, and no more than its own start and done
    # lines are apart (their stamps are cut to the millisecond, the elapsed is rounded).
    start, done = by_job[timed, "start"], by_job[timed, "done"]
    assert re.fullmatch(r"\d+\.\d{3}", done["ctx"]["elapsed"]), done
    between_s = (stamp(done) - stamp(start)).total_seconds()
    assert 0.25 <= float(done["ctx"]["elapsed"]) <= between_s + 0.002, (start, done)


def stamp(line: dict) -> datetime:
    return datetime.strptime(line["ts"], "%Y-%m-%dT%H:%M:%S.%fZ")


@pytest.mark.parametrize("args,message", [
    (["-c", "0"], "concurrency must be a whole number >= 1"),
    (["-q", "django,heavy"], "the weight must be a whole number"),
    (["-c", "many"], "invalid int value"),
])
def test_bad_flags_end_with_a_one_line_error(args, message):
    result = subprocess.run([*MANAGE, *args], cwd=ROOT, capture_output=True, text=True,
                            env=worker_env("redis://127.0.0.1:1/0", **DJANGO_ENV), timeout=60)
    assert result.returncode != 0
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_processes_flag_forks_workers_that_share_the_django_setup(start_django_worker,
                                                                  redis_client):
    orders = [Order.objects.create(number=n) for n in range(10)]
    worker = start_django_worker("-q", "django", "-c", "2", "--processes", "2")
    members = wait_until(lambda: len(redis_client.smembers(keys.PROCESSES)) == 2
                         and redis_client.smembers(keys.PROCESSES), 20, message="two children")
    pids = {int(m.decode().split(":")[1]) for m in members}
    assert worker.pid not in pids  # the parent supervises, it does not fetch
    for order in orders:
        mark_order.perform_async(order.id, "forked")
    wait_until(lambda: Order.objects.filter(note="forked").count() == 10, 20,
               message="orders updated by the children")
    worker.send(signal.SIGTERM)
    assert worker.wait(30) == 0
    assert redis_client.smembers(keys.PROCESSES) == set()


def test_a_project_logging_config_does_not_print_job_lines_twice(start_django_worker):
    order = Order.objects.create(number=3)
    jid = mark_order.perform_async(order.id, "logged once")
    worker = start_django_worker("-q", "django",
                                 env={"DJANGO_SETTINGS_MODULE": "tests.logging_settings"})
    wait_until(lambda: f"jid={jid} elapsed=" in worker.log(), 20, message="the done line")
    lines = worker.log().splitlines()
    assert sum(f"jid={jid}" in line and "INFO: done" in line for line in lines) == 1
    assert "done" not in [line.strip() for line in lines]  # no bare copy from the root
