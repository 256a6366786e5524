"""The Redis error boundary: every way core code reaches Redis raises Wurk's errors, and
no module outside the connection layer calls redis-py directly or names its errors."""

import re
from pathlib import Path

import pytest

from tests.support.redis_server import free_port
from wurk_django.core.errors import (
    RedisCommandError,
    RedisFailure,
    RedisUnavailableError,
    ScriptMissingError,
    WrongTypeError,
)
from wurk_django.core.redis import RedisConnection

PACKAGE = Path(__file__).resolve().parents[2] / "wurk_django"
LAYER = {PACKAGE / "core" / "redis.py", PACKAGE / "core" / "sentinel.py"}
# Names only redis-py's own exceptions carry; Wurk's are RedisFailure and its subclasses.
REDIS_PY_ERRORS = re.compile(r"redis\.exceptions|\bRedisError\b|redis\.(Connection|Response|"
                             r"Timeout|ReadOnly|NoScript)Error")
# A command sent on the raw client, rather than handed to read()/write() as a callable.
RAW_CALL = re.compile(r"connection\.client\.\w+\(")


def sources():
    for path in sorted(PACKAGE.rglob("*.py")):
        if path not in LAYER:
            yield path, path.read_text()


def test_no_module_outside_the_layer_names_redis_py_errors_or_calls_the_raw_client():
    named = [f"{path.relative_to(PACKAGE)}:{number}: {line.strip()}"
             for path, text in sources() for number, line in enumerate(text.splitlines(), 1)
             if REDIS_PY_ERRORS.search(line) or RAW_CALL.search(line)]
    assert named == []


@pytest.fixture
def dead_connection():
    connection = RedisConnection(f"redis://127.0.0.1:{free_port()}/0", socket_timeout_s=0.5)
    yield connection
    connection.close()


def test_every_path_to_a_dead_redis_raises_redis_unavailable(dead_connection):
    connection = dead_connection
    attempts = {
        "read": lambda: connection.read(connection.client.get, "k"),
        "write": lambda: connection.write(connection.client.set, "k", "v"),
        "pipeline": lambda: _pipeline(connection),
        "script": lambda: connection.script("leader_release")(keys=["k"], args=["me"]),
        "scan": lambda: list(connection.scan("*")),
        "sscan": lambda: list(connection.sscan("s")),
        "batch": lambda: connection.execute_batch([("PING",)]),
        "dedicated": lambda: connection.dedicated().execute([("PING",)]),
        "ping": connection.ping,
    }
    raised = {}
    for name, attempt in attempts.items():
        try:
            attempt()
        except Exception as exc:  # noqa: BLE001 - the test records what each call raises
            raised[name] = type(exc)
    assert raised == dict.fromkeys(attempts, RedisUnavailableError)


def _pipeline(connection):
    pipe = connection.pipeline()
    pipe.get("k")
    return pipe.execute()


def test_refusals_are_wurk_errors_wherever_they_come_from(config, redis_client):
    redis_client.set("wurk-test:string", "x")
    connection = RedisConnection(config.redis_url)
    try:
        with pytest.raises(WrongTypeError):
            connection.read(connection.client.lrange, "wurk-test:string", 0, -1)
        with pytest.raises(WrongTypeError):
            connection.write(connection.client.lpush, "wurk-test:string", "v")
        pipe = connection.pipeline()
        pipe.lpush("wurk-test:string", "v")
        pipe.get("wurk-test:string")
        wrong, value = pipe.execute(raise_on_error=False)
        assert isinstance(wrong, WrongTypeError) and value == b"x"
        [reply] = connection.dedicated().execute([("EVALSHA", "0" * 40, 0)])
        assert isinstance(reply, ScriptMissingError)
        with pytest.raises(RedisCommandError, match="unknown command"):
            connection.write(connection.client.execute_command, "NOSUCHCOMMAND")
    finally:
        connection.close()
    assert issubclass(RedisCommandError, RedisFailure)
    assert issubclass(RedisUnavailableError, (RedisFailure, ConnectionError))
