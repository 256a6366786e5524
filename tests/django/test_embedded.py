"""Embedded mode: a worker inside the web process, started once and only where it serves
(the project Redis it may use has tests of its own: test_project_redis.py)."""

import json
import os
import signal
import socket
import subprocess
import sys
import threading

import pytest
import redis

from tests.djangoapp import django_tasks
from tests.support.redis_server import free_port
from tests.support.workers import ROOT, wait_until, worker_env
from wurk_django import conf
from wurk_django import embedded as django_embedded
from wurk_django.core import (
    Client,
    Config,
    ConfigurationError,
    RedisUnavailableError,
    keys,
    project_redis,
    wurk_task,
)
from wurk_django.core.embedded import configure_embed
from wurk_django.core.redis import close_connections

MANAGE = [sys.executable, str(ROOT / "manage.py")]
EMBEDDED_SETTINGS = "tests.embedded_settings"


@wurk_task
def report_pid(marker):
    """Records which process ran it (imported on demand by the web process)."""
    client = redis.Redis.from_url(os.environ["REDIS_URL"])
    client.rpush("test:embedded", json.dumps([marker, os.getpid()]))
    client.close()


def reports(redis_client) -> list:
    return [json.loads(item) for item in redis_client.lrange("test:embedded", 0, -1)]


def identities(redis_client) -> list[bytes]:
    """Every process identity ever registered, even one already unregistered at exit
    (its identity hash outlives it for up to 60 s)."""
    return [key for key in redis_client.scan_iter()
            if redis_client.type(key) == b"hash" and redis_client.hexists(key, "info")]


def new_wurk_threads(before: set) -> list[str]:
    return [t.name for t in threading.enumerate()
            if t not in before and t.name.startswith("wurk") and t.is_alive()]


# --- which processes start it -------------------------------------------------------

@pytest.mark.parametrize("argv, environ, serving", [
    (["manage.py", "runserver"], {}, False),                          # autoreload watcher
    (["manage.py", "runserver"], {"RUN_MAIN": "true"}, True),         # its serving child
    (["manage.py", "runserver", "--noreload"], {}, True),
    (["/x/django/__main__.py", "runserver"], {"RUN_MAIN": "true"}, True),
    (["manage.py", "migrate"], {}, False),
    (["manage.py", "check"], {"RUN_MAIN": "true"}, False),
    (["manage.py", "shell"], {}, False),
    (["manage.py", "test"], {}, False),
    (["manage.py", "wurk_worker"], {}, False),
    (["manage.py"], {}, False),
    (["/venv/bin/django-admin", "runserver", "--noreload"], {}, True),
    (["./admin-script", "migrate"], {}, False),                       # a renamed manage.py
    (["/venv/bin/gunicorn", "mysite.wsgi", "-w", "2"], {}, True),
    (["/venv/bin/uvicorn", "mysite.asgi:application"], {}, True),
    (["/venv/bin/pytest", "-q"], {}, False),
    (["/venv/lib/site-packages/pytest/__main__.py"], {}, False),
])
def test_only_web_serving_processes_host_it(argv, environ, serving):
    assert django_embedded.web_serving(argv, environ) is serving


@pytest.mark.parametrize("value, overrides", [
    (None, None), (False, None), (True, {}), ({"CONCURRENCY": 4}, {"concurrency": 4}),
    ({"QUEUES": ["low"]}, {"queues": ["low"]}),
])
def test_the_embedded_setting(value, overrides):
    # Parsed with every other WURK key, in conf (the embedded module only asks it).
    assert conf.embedded_overrides({"EMBEDDED": value}) == overrides


def test_an_unknown_embedded_key_is_refused():
    with pytest.raises(ConfigurationError, match="EMBEDDED"):
        conf.embedded_overrides({"EMBEDDED": {"THREADS": 2}})


# --- the core Embedded, in this process ---------------------------------------------

def test_embedded_jobs_run_in_this_process(config, redis_client):
    before = set(threading.enumerate())
    embedded = configure_embed(config.replace(concurrency=5))
    embedded.run()
    try:
        (identity,) = redis_client.smembers(keys.PROCESSES)
        info = json.loads(redis_client.hget(identity, "info"))
        assert info["embedded"] is True and info["concurrency"] == 2
        assert info["pid"] == os.getpid()
        report_pid.perform_async("in-process")
        wait_until(lambda: reports(redis_client), 10, message="the job to run")
        assert reports(redis_client) == [["in-process", os.getpid()]]
    finally:
        embedded.stop()
    assert redis_client.smembers(keys.PROCESSES) == set()
    assert new_wurk_threads(before) == []
    embedded.stop()  # a second stop does nothing


def test_overrides_apply_after_the_embedded_default(config):
    assert configure_embed(config, concurrency=4, tag="web").config.concurrency == 4
    assert configure_embed(config).config.embedded is True


def test_a_config_in_use_cannot_be_embedded_again(config):
    embedded = configure_embed(config)
    embedded.run()
    try:
        with pytest.raises(ConfigurationError):
            configure_embed(embedded.config)
        with pytest.raises(ConfigurationError):
            embedded.run()
    finally:
        embedded.stop()


def test_a_failing_startup_handler_stops_everything_and_is_reraised(config, redis_client):
    def broken():
        raise RuntimeError("no database")

    config.on("startup", broken)
    before = set(threading.enumerate())
    embedded = configure_embed(config)
    with pytest.raises(RuntimeError, match="no database"):
        embedded.run()
    assert new_wurk_threads(before) == []
    assert redis_client.smembers(keys.PROCESSES) == set()
    assert embedded.launcher is None


class Interrupted(BaseException):
    """Stands for a Ctrl-C arriving while the launcher is half started."""


def test_a_failure_after_the_launcher_registered_unregisters_it(config, redis_client):
    # The first heartbeat is written while the launcher starts, before any processor
    # thread; a `beat` handler raising past `except Exception` aborts run() there.
    def interrupt():
        raise Interrupted()

    config.on("beat", interrupt)
    before = set(threading.enumerate())
    embedded = configure_embed(config)
    with pytest.raises(Interrupted):
        embedded.run()
    assert new_wurk_threads(before) == []
    assert redis_client.smembers(keys.PROCESSES) == set()


def test_an_unreachable_redis_fails_the_start_and_starts_nothing(config):
    before = set(threading.enumerate())
    embedded = configure_embed(config.replace(redis_url=f"redis://127.0.0.1:{free_port()}/0"))
    with pytest.raises(RedisUnavailableError):
        embedded.run()
    assert new_wurk_threads(before) == []


def test_a_second_start_in_the_same_process_is_a_no_op(config, redis_client):
    first = django_embedded.start()
    try:
        assert django_embedded.start() is first
        assert django_embedded.current() is first
        assert len(redis_client.smembers(keys.PROCESSES)) == 1
    finally:
        django_embedded.stop()
    assert django_embedded.current() is None
    assert redis_client.smembers(keys.PROCESSES) == set()


def test_the_embedded_worker_serves_the_task_backends_queues_too(config, redis_client):
    # tests.settings: WURK["QUEUES"] is ["default"], TASKS also enqueue to "reports".
    embedded = django_embedded.start()
    try:
        assert embedded.config.capsules_[0].queue_names == ["default", "reports"]
        result = django_tasks.report.enqueue("weekly")
        wait_until(lambda: django_tasks.report.get_result(result.id).status.name ==
                   "SUCCESSFUL", 15, message="the reports task run by the embedded worker")
    finally:
        django_embedded.stop()


def test_embedded_queues_named_in_the_setting_are_served_as_given(config, redis_client):
    embedded = django_embedded.start(queues=("default",))
    try:
        assert embedded.config.capsules_[0].queue_names == ["default"]
    finally:
        django_embedded.stop()


# --- real web processes -------------------------------------------------------------

def embedded_env(redis_url, tmp_path) -> dict:
    return worker_env(redis_url, DJANGO_SETTINGS_MODULE=EMBEDDED_SETTINGS,
                      WURK_TEST_DB=str(tmp_path / "db.sqlite3"))


def listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def parent_pid(pid: int) -> int:
    with open(f"/proc/{pid}/stat", "rb") as stat:
        return int(stat.read().rsplit(b")", 1)[1].split()[1])


@pytest.fixture
def start_runserver(tmp_path):
    """Start `manage.py runserver` with its autoreloader: a watcher and a serving child."""
    started = []

    def start(env: dict) -> subprocess.Popen:
        port = free_port()
        log_path = tmp_path / f"runserver-{len(started)}.log"
        with open(log_path, "wb") as log:
            process = subprocess.Popen([*MANAGE, "runserver", f"127.0.0.1:{port}"], cwd=ROOT,
                                       env=env, stdout=log, stderr=subprocess.STDOUT,
                                       start_new_session=True)
        started.append(process)
        wait_until(lambda: listening(port) or process.poll() is not None, 60, 0.05,
                   "runserver to listen")
        assert process.poll() is None, log_path.read_text()
        return process

    yield start
    for process in started:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)


@pytest.fixture
def runserver(start_runserver, redis_url, tmp_path):
    return start_runserver(embedded_env(redis_url, tmp_path))


def serving_child(redis_client, identity: bytes, watcher_pid: int) -> int:
    info = json.loads(redis_client.hget(identity, "info"))
    assert info["embedded"] is True and info["concurrency"] == 3
    assert info["pid"] != watcher_pid and parent_pid(info["pid"]) == watcher_pid
    return info["pid"]


def reloaded(old_identity: bytes, redis_client) -> bytes | None:
    """Touch a watched module until the autoreloader has replaced the serving child."""
    os.utime(ROOT / "tests" / "embedded_settings.py")
    members = redis_client.smembers(keys.PROCESSES)
    return next(iter(members)) if len(members) == 1 and old_identity not in members else None


@pytest.mark.slow
def test_runserver_starts_one_embedded_worker_in_its_serving_child(runserver, redis_client,
                                                                  config):
    (identity,) = redis_client.smembers(keys.PROCESSES)
    child = serving_child(redis_client, identity, runserver.pid)
    assert identities(redis_client) == [identity]  # the watcher never registered one

    report_pid.perform_async("web")
    wait_until(lambda: reports(redis_client), 15, message="the web process to run the job")
    assert reports(redis_client) == [["web", child]]

    # A code change: the old child stops its worker at exit, the new child starts one.
    new_identity = wait_until(lambda: reloaded(identity, redis_client), 30, 0.5,
                              "the autoreloader to restart the serving child")
    assert serving_child(redis_client, new_identity, runserver.pid) != child
    assert sorted(identities(redis_client)) == sorted([identity, new_identity])

    os.killpg(runserver.pid, signal.SIGINT)
    assert runserver.wait(30) == 0


@pytest.mark.slow
def test_runserver_on_the_project_redis_needs_no_redis_at_all(start_runserver, tmp_path):
    project = tmp_path / "project"
    folder = project_redis.project_folder(project)
    url = project_redis.socket_url(folder)
    env = {**embedded_env(url, tmp_path), "WURK_REDIS_URL": "embedded",
           "WURK_TEST_PROJECT_DIR": str(project)}
    client = redis.Redis.from_url(url)
    try:
        runserver = start_runserver(env)
        (identity,) = client.smembers(keys.PROCESSES)
        child = serving_child(client, identity, runserver.pid)
        Client(Config(redis_url=url)).push({"class": report_pid.name, "args": ["e2e"]})
        wait_until(lambda: reports(client), 15, message="the web process to run the job")
        assert reports(client) == [["e2e", child]]
        os.killpg(runserver.pid, signal.SIGINT)
        assert runserver.wait(30) == 0
        # The server belongs to the project, not to the web process that started it.
        assert project_redis.server_status(folder)["running"]
    finally:
        client.close()
        close_connections()
        project_redis.stop_server(folder)


@pytest.mark.slow
@pytest.mark.parametrize("command", [["check"], ["migrate", "--no-input"],
                                     ["shell", "-c", "print('ok')"]])
def test_other_management_commands_start_none(command, redis_url, redis_client, tmp_path):
    result = subprocess.run([*MANAGE, *command], cwd=ROOT, capture_output=True, text=True,
                            env=embedded_env(redis_url, tmp_path), timeout=120)
    assert result.returncode == 0, result.stderr
    assert identities(redis_client) == []


@pytest.mark.slow
def test_a_wsgi_server_process_hosts_it_and_stops_it_at_exit(redis_url, redis_client,
                                                             tmp_path):
    # What gunicorn or uvicorn do: load the WSGI application, no management command.
    code = ("from django.core.wsgi import get_wsgi_application\n"
            "from wurk_django import embedded\n"
            "get_wsgi_application()\n"
            "print(embedded.current().launcher.identity)\n")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                            text=True, env=embedded_env(redis_url, tmp_path), timeout=120)
    assert result.returncode == 0, result.stderr
    identity = result.stdout.strip().encode()
    assert identities(redis_client) == [identity]
    assert json.loads(redis_client.hget(identity, "info"))["embedded"] is True
    assert redis_client.smembers(keys.PROCESSES) == set()  # unregistered at exit
