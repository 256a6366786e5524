"""Suite-wide fixtures: a private redis-server, a flushed database per test, workers; and a
guard that fails any test connecting to the machine's shared Redis on port 6379."""

import itertools
import os
import shutil
import tempfile

import pytest
import redis

from tests.support import shared_redis_guard
from tests.support.redis_server import RedisServer
from tests.support.workers import ROOT, WorkerProcess, worker_env
from wurk_django.core import Config, set_default_config
from wurk_django.core.redis import close_connections

# --- the shared-Redis guard: a connection to port 6379 fails the test that made it --------

_guard: shared_redis_guard.Guard | None = None
_saved_environ: dict = {}


def pytest_configure(config):
    """Guard this process, and (through sitecustomize on PYTHONPATH) every process started."""
    global _guard
    log_path = os.path.join(tempfile.mkdtemp(prefix="wurk-guard-"), "stray-redis.log")
    _guard = shared_redis_guard.install(log_path)
    for name in (shared_redis_guard.LOG_VARIABLE, "PYTHONPATH"):
        _saved_environ[name] = os.environ.get(name)
    os.environ[shared_redis_guard.LOG_VARIABLE] = log_path
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [
        shared_redis_guard.SITE_DIR, str(ROOT), os.environ.get("PYTHONPATH")]))


def pytest_unconfigure(config):
    if _guard is None:
        return
    _guard.uninstall()
    for name, value in _saved_environ.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    shutil.rmtree(os.path.dirname(_guard.log_path), ignore_errors=True)


def _fail_on_strays(when: str) -> None:
    attempts = _guard.new_attempts() if _guard else []
    if attempts:
        pytest.fail(f"connection to the shared Redis on port "
                    f"{shared_redis_guard.GUARDED_PORT} during {when} (refused by the test "
                    f"guard; use the redis_url fixture):\n  " + "\n  ".join(attempts),
                    pytrace=False)


def _guarded_phase(when: str):
    try:
        result = yield
    except BaseException:
        _fail_on_strays(when)  # a stray connection may be why the phase failed: say so
        raise
    _fail_on_strays(when)
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    return (yield from _guarded_phase("setup"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    return (yield from _guarded_phase("the test"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    return (yield from _guarded_phase("teardown"))


def pytest_sessionfinish(session, exitstatus):
    attempts = _guard.new_attempts() if _guard else []
    if attempts:  # after the last test's teardown, e.g. from a process still running
        print("\nconnections to the shared Redis on port 6379 after the last test:\n  "
              + "\n  ".join(attempts))
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture
def stray_redis_guard() -> shared_redis_guard.Guard:
    """The guard, for tests of the guard: `new_attempts()` takes the attempts they made."""
    return _guard


@pytest.fixture(scope="session", autouse=True)
def redis_server():
    """The suite's private redis-server; Django settings reach it via WURK_REDIS_URL."""
    server = RedisServer().start()
    saved = {name: os.environ.get(name) for name in ("WURK_REDIS_URL", "REDIS_URL")}
    os.environ["WURK_REDIS_URL"] = os.environ["REDIS_URL"] = server.url
    yield server
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    server.cleanup()


@pytest.fixture
def redis_url(redis_server) -> str:
    return redis_server.url


@pytest.fixture(autouse=True)
def redis_client(redis_server):
    """A client on the private server; the database is flushed before and after each test."""
    client = redis.Redis.from_url(redis_server.url)
    client.flushall()
    yield client
    client.flushall()
    client.close()


@pytest.fixture
def config(redis_url):
    """A config on the private server, installed as the default for pushes in this test."""
    config = Config(redis_url=redis_url, tag="tests")
    set_default_config(config)
    yield config
    set_default_config(None)
    close_connections()


_log_numbers = itertools.count()


@pytest.fixture
def start_worker(redis_url, tmp_path):
    """Start real worker processes: `start_worker("-c", "2", "-q", "default")`."""
    started = []

    def start(*args, require="tests.core.jobs", env=None, command=None, redis=None):
        log_path = tmp_path / f"worker-{next(_log_numbers)}.log"
        full_args = ["--require", require, *args] if require else list(args)
        worker = WorkerProcess(full_args, worker_env(redis or redis_url, **(env or {})),
                               log_path, command=command)
        started.append(worker.start())
        return worker

    yield start
    for worker in started:
        worker.stop()
