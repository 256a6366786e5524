"""Suite-wide fixtures: a private redis-server, a flushed database per test, workers."""

import itertools
import os

import pytest
import redis

from tests.support.redis_server import RedisServer
from tests.support.workers import WorkerProcess, worker_env
from wurk_django.core import Config, set_default_config
from wurk_django.core.redis import close_connections


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
