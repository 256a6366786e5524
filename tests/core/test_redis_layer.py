"""The Redis layer against real servers: retry rules for reads and writes, fail-over,
the Lua script loader, and URL masking. Connections are dropped for real (CLIENT KILL)."""

import threading
import time

import pytest
import redis

from tests.support.redis_server import RedisServer, free_port
from tests.support.workers import wait_until
from wurk_django import Client
from wurk_django.core import Config, RedisUnavailableError, WurkError, keys
from wurk_django.core import redis as wurk_redis
from wurk_django.core.errors import RedisCommandError, WrongTypeError
from wurk_django.core.payload import loads
from wurk_django.core.redis import (
    RedisConnection,
    close_connections,
    connection_for,
    is_failover_error,
    mask_url,
)

BLOCK_S = 3  # below the connection's 5 s socket timeout


class OnBlocked(threading.Thread):
    """Waits until a client blocks in `command`, then acts on it from another connection.

    `action(admin, client_id)` runs once per blocked call, `times` times; `then(admin)` after.
    """

    def __init__(self, admin, command, action, then=None, times=1):
        super().__init__(daemon=True)
        self.admin, self.command, self.action = admin, command, action
        self.then, self.times = then, times
        self.error = None

    def run(self):
        try:
            handled = set()
            for _ in range(self.times):
                client = wait_until(lambda: self._blocked(handled), timeout_s=5,
                                    message=f"a client blocked in {self.command}")
                handled.add(client["id"])
                self.action(self.admin, client["id"])
            if self.then:
                self.then(self.admin)
        except BaseException as exc:  # noqa: BLE001 - kept for finish() to raise in the test
            self.error = exc

    def _blocked(self, handled):
        for client in self.admin.client_list():
            if client.get("cmd") == self.command and client["id"] not in handled:
                return client
        return None

    def finish(self):
        self.join(10)
        if self.error:
            raise self.error


def kill(admin, client_id):
    admin.client_kill_filter(_id=client_id)


def unblock_with_error(admin, client_id):
    admin.client_unblock(int(client_id), error=True)


@pytest.fixture
def connection(redis_url):
    connection = RedisConnection(redis_url)
    yield connection
    connection.close()


# --- redis-py's own retries are off ----------------------------------------------------

def test_the_pool_is_built_with_redis_py_retries_off(connection):
    assert connection.pool.connection_kwargs["retry"].get_retries() == 0
    conn = connection.pool.get_connection()
    try:
        assert conn.retry.get_retries() == 0
    finally:
        connection.pool.release(conn)


def test_a_dropped_connection_is_not_silently_retried_by_redis_py(connection, redis_client):
    # If redis-py retried, the second BLPOP would find the value pushed after the kill.
    thread = OnBlocked(redis_client, "blpop", kill,
                       then=lambda admin: admin.rpush("wurk-test:list", "v"))
    thread.start()
    with pytest.raises(redis.exceptions.ConnectionError):
        connection.client.blpop("wurk-test:list", timeout=BLOCK_S)
    thread.finish()
    assert redis_client.lrange("wurk-test:list", 0, -1) == [b"v"]


# --- reads retry once; writes never retry on a dropped link ------------------------------

def test_read_retries_once_after_the_connection_is_killed(connection, redis_client):
    calls = []

    def blocking_read():
        calls.append(1)
        return connection.client.blpop("wurk-test:list", timeout=BLOCK_S)

    thread = OnBlocked(redis_client, "blpop", kill,
                       then=lambda admin: admin.rpush("wurk-test:list", "v"))
    thread.start()
    assert list(connection.read(blocking_read)) == [b"wurk-test:list", b"v"]
    thread.finish()
    assert len(calls) == 2


def test_read_gives_up_after_the_second_drop(connection, redis_client):
    calls = []

    def blocking_read():
        calls.append(1)
        return connection.client.blpop("wurk-test:list", timeout=BLOCK_S)

    thread = OnBlocked(redis_client, "blpop", kill, times=2)
    thread.start()
    with pytest.raises(RedisUnavailableError) as info:
        connection.read(blocking_read)
    thread.finish()
    assert len(calls) == 2
    assert isinstance(info.value, ConnectionError) and isinstance(info.value, WurkError)
    assert isinstance(info.value.__cause__, redis.exceptions.ConnectionError)


def test_a_read_after_an_idle_kill_just_works(connection, redis_client):
    assert connection.ping()
    redis_client.client_kill_filter(_type="normal", skipme=True)
    assert connection.read(connection.client.get, "missing") is None


def test_a_write_is_never_sent_twice_on_a_dropped_connection(connection, redis_client):
    calls = []

    def move():  # not idempotent: a second send would move the value pushed below
        calls.append(1)
        return connection.client.blmove("wurk-test:src", "wurk-test:dst", BLOCK_S)

    thread = OnBlocked(redis_client, "blmove", kill,
                       then=lambda admin: admin.rpush("wurk-test:src", "job"))
    thread.start()
    with pytest.raises(RedisUnavailableError):
        connection.write(move)
    thread.finish()
    assert len(calls) == 1
    assert redis_client.lrange("wurk-test:src", 0, -1) == [b"job"]
    assert not redis_client.exists("wurk-test:dst")


# --- fail-over: READONLY, NOREPLICAS, UNBLOCKED ------------------------------------------

@pytest.fixture
def replica(redis_server):
    """A second real server, made a replica of the suite's server: writes get READONLY."""
    server = RedisServer().start()
    admin = redis.Redis(port=server.port)
    admin.replicaof("127.0.0.1", str(redis_server.port))
    yield server, admin
    admin.close()
    server.cleanup()


@pytest.fixture
def min_replicas(redis_client):
    """Make the suite's server refuse writes with NOREPLICAS; always restored."""
    redis_client.config_set("min-replicas-to-write", 1)
    yield
    redis_client.config_set("min-replicas-to-write", 0)


def test_write_retries_once_when_a_replica_refuses_it(replica):
    server, admin = replica
    connection = RedisConnection(server.url)
    calls = []

    def write_key():
        calls.append(1)
        try:
            return connection.client.set("wurk-test:key", "v")
        finally:
            if len(calls) == 1:
                admin.replicaof("NO", "ONE")  # the fail-over completes: now a primary

    try:
        assert connection.write(write_key) is True
    finally:
        connection.close()
    assert len(calls) == 2
    assert admin.get("wurk-test:key") == b"v"


def test_write_retries_only_once_on_readonly(replica):
    server, _ = replica
    connection = RedisConnection(server.url)
    calls = []

    def write_key():
        calls.append(1)
        return connection.client.set("wurk-test:key", "v")

    try:
        with pytest.raises(RedisCommandError, match="read only replica"):
            connection.write(write_key)
    finally:
        connection.close()
    assert len(calls) == 2


class HealingConnection(RedisConnection):
    """A real connection whose first push batch ends the NOREPLICAS condition after failing."""

    def __init__(self, url, admin):
        super().__init__(url)
        self.admin = admin
        self.attempts = 0

    def execute_batch(self, commands):
        self.attempts += 1
        try:
            return super().execute_batch(commands)
        finally:
            self.admin.config_set("min-replicas-to-write", 0)


def test_a_push_pipeline_refused_with_noreplicas_is_retried_once(config, redis_client,
                                                                 min_replicas):
    connection = HealingConnection(config.redis_url, redis_client)
    try:
        jid = Client(config, connection).push({"class": "X", "args": [1]})
    finally:
        connection.close()
    assert connection.attempts == 2
    [raw] = redis_client.lrange(keys.queue("default"), 0, -1)
    assert loads(raw)["jid"] == jid


def test_a_push_refused_twice_raises_and_writes_nothing(config, redis_client, min_replicas):
    with pytest.raises(RedisCommandError, match="NOREPLICAS"):
        Client(config).push({"class": "X", "args": [1]})
    redis_client.config_set("min-replicas-to-write", 0)
    assert redis_client.dbsize() == 0


def test_write_retries_once_when_unblocked_with_an_error(connection, redis_client):
    calls = []

    def move():
        calls.append(1)
        return connection.client.blmove("wurk-test:src", "wurk-test:dst", BLOCK_S)

    thread = OnBlocked(redis_client, "blmove", unblock_with_error,
                       then=lambda admin: admin.rpush("wurk-test:src", "job"))
    thread.start()
    assert connection.write(move) == b"job"
    thread.finish()
    assert len(calls) == 2
    assert redis_client.lrange("wurk-test:dst", 0, -1) == [b"job"]


def test_other_errors_are_not_retried_and_say_what_redis_said(connection, redis_client):
    redis_client.set("wurk-test:string", "x")
    calls = []

    def push_to_a_string():
        calls.append(1)
        pipe = connection.pipeline()
        pipe.lpush("wurk-test:string", "job")
        return pipe.execute()

    with pytest.raises(WrongTypeError, match="WRONGTYPE") as info:
        connection.write(push_to_a_string)
    assert len(calls) == 1
    assert info.value.__cause__ is not info.value


def test_is_failover_error_reads_real_replies(replica, redis_client):
    server, admin = replica
    with pytest.raises(redis.exceptions.ResponseError) as readonly:
        admin.set("k", "v")
    assert is_failover_error(readonly.value)
    redis_client.set("wurk-test:string", "x")
    with pytest.raises(redis.exceptions.ResponseError) as wrongtype:
        redis_client.lpush("wurk-test:string", "x")
    assert not is_failover_error(wrongtype.value)


# --- unreachable Redis --------------------------------------------------------------

def test_an_unreachable_redis_raises_redis_unavailable_without_the_password():
    connection = RedisConnection(f"redis://:s3cret@127.0.0.1:{free_port()}/0",
                                 socket_timeout_s=1)
    try:
        with pytest.raises(RedisUnavailableError) as read_error:
            connection.ping()
        with pytest.raises(RedisUnavailableError) as write_error:
            connection.write(connection.client.set, "k", "v")
    finally:
        connection.close()
    for error in (read_error.value, write_error.value):
        assert "s3cret" not in str(error)
        assert "****" in str(error)


# --- Lua scripts --------------------------------------------------------------------

def _script_stats(redis_client):
    stats = redis_client.info("commandstats")
    return (stats.get("cmdstat_script|load", {}).get("calls", 0),
            stats.get("cmdstat_evalsha", {}).get("calls", 0),
            stats.get("cmdstat_eval", {}).get("calls", 0))


def test_lua_script_is_loaded_once_and_reloaded_after_script_flush(connection, redis_client):
    redis_client.script_flush()
    redis_client.config_resetstat()
    script = connection.script("pop_by_score")
    assert connection.script("pop_by_score") is script
    now = time.time()
    redis_client.zadd(keys.SCHEDULE, {"due-1": now - 10, "due-2": now - 5, "future": now + 100})
    assert script(keys=[keys.SCHEDULE], args=[repr(now)]) == b"due-1"
    assert script(keys=[keys.SCHEDULE], args=[repr(now)]) == b"due-2"
    assert script(keys=[keys.SCHEDULE], args=[repr(now)]) is None
    assert redis_client.zrange(keys.SCHEDULE, 0, -1) == [b"future"]
    loads_, evalshas, evals = _script_stats(redis_client)
    assert loads_ == 1       # one SCRIPT LOAD, after the first NOSCRIPT
    assert evalshas == 4     # called by SHA every time
    assert evals == 0        # the source is never sent with EVAL
    redis_client.script_flush()
    assert script(keys=[keys.SCHEDULE], args=[repr(time.time() + 200)]) == b"future"
    assert _script_stats(redis_client)[0] == 2


# --- shared pools and URL masking -------------------------------------------------------

def test_connection_for_shares_one_connection_per_url_and_settings(config):
    first = connection_for(config)
    assert connection_for(config) is first
    assert connection_for(config.replace(tag="other")) is first
    other = connection_for(config.replace(redis_url=config.redis_url.replace("/0", "/1")))
    assert other is not first
    close_connections()
    assert connection_for(config) is not first


def test_pool_size_defaults_to_total_concurrency_plus_five(config):
    assert connection_for(config).pool.max_connections == config.total_concurrency + 5
    sized = Config(redis_url=config.redis_url, redis_pool_size=3)
    assert connection_for(sized).pool.max_connections == 3


@pytest.mark.parametrize("packer", ["hiredis", "python"])
def test_batches_reach_redis_byte_for_byte_with_either_packer(connection, redis_client,
                                                              monkeypatch, packer):
    # hiredis is in the test extra, so both test venvs have it: where it is installed the
    # module packs with it; the pure-Python packer runs where it is missing.
    import hiredis
    assert wurk_redis._pack_command is hiredis.pack_command, "hiredis is installed, not used"
    chosen = {"hiredis": hiredis.pack_command, "python": wurk_redis._pack_python}[packer]
    packed = []

    def recording(command):
        packed.append(command[0])
        return chosen(command)

    monkeypatch.setattr(wurk_redis, "_pack_command", recording)
    payload = '{"args":["é",1],"class":"A"}'.encode()
    link = connection.dedicated()
    try:
        replies = link.execute([("RPUSH", "k:list", payload, "naïve", 42, 1.5, -7, b""),
                                ("LRANGE", b"k:list", 0, -1), ("INCRBYFLOAT", "k:f", 0.25)])
    finally:
        link.close()
    assert replies[0] == 6
    assert replies[1] == [payload, "naïve".encode(), b"42", b"1.5", b"-7", b""]
    assert float(replies[2]) == 0.25
    assert redis_client.llen("k:list") == 6
    assert packed == ["RPUSH", "LRANGE", "INCRBYFLOAT"]  # every command, by that packer


def test_server_version_is_read(connection):
    assert connection.server_version() >= (6, 2)


@pytest.mark.parametrize("url, masked", [
    ("redis://:secret@cache.example:6379/0", "redis://:****@cache.example:6379/0"),
    ("redis://user:pa%40ss@cache.example/2", "redis://user:****@cache.example/2"),
    ("rediss://default:secret@[::1]:6380/0", "rediss://default:****@[::1]:6380/0"),
    ("redis://cache.example:6379/0?password=secret&db=1",
     "redis://cache.example:6379/0?password=****&db=1"),
    ("redis://cache.example:6379/0", "redis://cache.example:6379/0"),
    ("redis://user@cache.example:6379/0", "redis://user@cache.example:6379/0"),
    ("unix:///var/run/redis.sock?db=0", "unix:///var/run/redis.sock?db=0"),
])
def test_mask_url_hides_passwords(url, masked):
    assert mask_url(url) == masked
    assert "secret" not in mask_url(url)


FORK_PUSHES = """
import os, sys
from wurk_django.core import Client, Config
client = Client(Config(redis_url=sys.argv[1]))
client.push({"class": "X", "args": ["before fork"]})  # the parent now holds a socket
pid = os.fork()
for n in range(200):
    client.push({"class": "X", "args": [os.getpid(), n]})
if pid == 0:
    os._exit(0)
_, status = os.waitpid(pid, 0)
print(status)
"""


def test_a_forked_child_never_shares_the_parents_push_socket(redis_url, redis_client):
    import subprocess
    import sys
    result = subprocess.run([sys.executable, "-c", FORK_PUSHES, redis_url], capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "0"  # the child pushed without a protocol error
    jobs = [loads(raw) for raw in redis_client.lrange(keys.queue("default"), 0, -1)]
    assert len(jobs) == 401
    assert len({job["jid"] for job in jobs}) == 401
