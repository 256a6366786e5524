"""Redis connections: pools, the retry rules for reads and writes, Lua scripts, and the
error boundary: every redis-py error leaves this module as a Wurk RedisFailure."""

import logging
import os
import re
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlsplit, urlunsplit

import redis
from redis.backoff import NoBackoff
from redis.client import Pipeline as _RedisPipeline
from redis.retry import Retry

from . import sentinel
from .errors import (
    RedisCommandError,
    RedisFailure,
    RedisUnavailableError,
    ScriptMissingError,
    WrongTypeError,
)

logger = logging.getLogger("wurk")

LUA_DIR = Path(__file__).with_name("lua")
# A line `--@include <name>` in a script stands for the text of lua/<name>.lua: Redis
# runs each script alone, so code two scripts share is spliced in when they are read.
_INCLUDE = re.compile(r"^--@include (\w+)$", re.MULTILINE)
_lua_sources: dict[str, str] = {}


def lua_source(name: str) -> str:
    """The text of `lua/<name>.lua` with its includes spliced in (read once per process)."""
    source = _lua_sources.get(name)
    if source is None:
        text = (LUA_DIR / f"{name}.lua").read_text()
        source = _lua_sources[name] = _INCLUDE.sub(
            lambda match: (LUA_DIR / f"{match.group(1)}.lua").read_text().rstrip("\n"), text)
    return source


# Errors that mean "the connection is gone", not "Redis refused the command".
CONNECTION_ERRORS = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError)
# What callers outside this module catch: Wurk's own types only.
REDIS_ERRORS = (RedisFailure,)
# Replies after a fail-over: the write was refused, so sending it again is safe. A
# pipeline prefixes the reply with "Command # n (...) of pipeline caused error: ".
_FAILOVER_REPLY = re.compile(r"(?:^|caused error: )(?:READONLY|NOREPLICAS|UNBLOCKED)\b")
_QUERY_PASSWORD = re.compile(r"(?:(?<=[?&]password=)|(?<=[?&]sentinel_password=))[^&]*")


def mask_url(url: str) -> str:
    """Hide the password in a Redis URL, in the user part or the query, so it can be logged."""
    parts = urlsplit(url)
    if parts.password is not None:
        user_info, _, host = parts.netloc.rpartition("@")
        user = user_info.partition(":")[0]
        url = urlunsplit(parts._replace(netloc=f"{user}:****@{host}"))
    return _QUERY_PASSWORD.sub("****", url)


def is_failover_error(exc: BaseException) -> bool:
    if isinstance(exc, redis.exceptions.ReadOnlyError):
        return True
    if isinstance(exc, RedisCommandError):
        return _FAILOVER_REPLY.search(exc.reply) is not None
    return (isinstance(exc, redis.exceptions.ResponseError)
            and _FAILOVER_REPLY.search(str(exc)) is not None)


class RedisConnection:
    """One pool for a URL, with Wurk's retry policy and its Lua scripts.

    redis-py retries every command on a dropped connection by default, which would
    send a push twice; the pool is built with retries off and `read()` opts back in.
    A `redis+sentinel://` URL gets a pool whose sockets follow the master the Sentinels
    name (core/sentinel.py).
    """

    def __init__(self, url: str, *, pool_size: int = 20, socket_timeout_s: float = 5.0,
                 **options):
        self.url = url
        self.masked_url = mask_url(url)
        options.setdefault("socket_connect_timeout", socket_timeout_s)
        options.setdefault("health_check_interval", 0)
        self.sentinel = sentinel.is_sentinel_url(url)
        # A BlockingConnectionPool, or a SentinelPool (`watch`, `stale`) for Sentinel.
        self.pool: Any
        if self.sentinel:
            self.pool = sentinel.sentinel_pool(url, options, max_connections=pool_size,
                                               timeout_s=socket_timeout_s,
                                               socket_timeout_s=socket_timeout_s)
        else:
            self.pool = redis.BlockingConnectionPool.from_url(
                url, max_connections=pool_size, timeout=socket_timeout_s,
                socket_timeout=socket_timeout_s, retry=Retry(NoBackoff(), 0), **options)
        self.client = redis.Redis(connection_pool=self.pool)
        self._scripts: dict[str, Script] = {}
        self._links: list[DedicatedConnection] = []
        self._links_pid = os.getpid()
        self._links_lock = threading.Lock()
        self._link_slots = threading.BoundedSemaphore(pool_size)

    def pipeline(self, transaction: bool = False) -> "Pipeline":
        """A pipeline whose `execute()` raises (and returns) Wurk errors only."""
        return Pipeline(self.pool, self.client.response_callbacks, transaction, None,
                        where=self.masked_url)

    def read(self, fn: Callable, *args, **kwargs):
        """Run an idempotent read, retrying once if the connection dropped."""
        try:
            return fn(*args, **kwargs)
        except CONNECTION_ERRORS:
            pass
        except redis.exceptions.RedisError as exc:
            raise_translated(exc, self.masked_url)
        try:
            return fn(*args, **kwargs)
        except redis.exceptions.RedisError as exc:
            raise_translated(exc, self.masked_url)

    def read_once(self, fn: Callable, *args, **kwargs):
        """Run a read once, with no retry on a dropped link."""
        try:
            return fn(*args, **kwargs)
        except redis.exceptions.RedisError as exc:
            raise_translated(exc, self.masked_url)

    def write(self, fn: Callable, *args, **kwargs):
        """Run a write; retry once only when a fail-over refused it, never on a dropped link."""
        try:
            return fn(*args, **kwargs)
        except (redis.exceptions.RedisError, RedisCommandError) as exc:
            if not is_failover_error(exc):
                raise_translated(exc, self.masked_url)
            logger.warning("Redis refused a write during fail-over (%s); reconnecting", exc)
            self._after_failover()
        try:
            return fn(*args, **kwargs)
        except redis.exceptions.RedisError as exc:
            raise_translated(exc, self.masked_url)

    def _after_failover(self) -> None:
        """Idle sockets still point at the old primary: close them, the pool's and the
        batch links'. Sockets other threads are using are left alone: closing them could
        fail a write already sent. Under Sentinel, ask for the master's address first,
        so the next connect (and `stale()`) knows where it went."""
        if self.sentinel:
            try:
                self.pool.get_master_address()
            except redis.exceptions.RedisError:
                pass  # the write's retry reports what is wrong
        self.pool.disconnect(inuse_connections=False)
        with self._links_lock:
            if self._links_pid == os.getpid():  # after fork(), the parent's: never close
                for link in self._links:
                    link.close()  # idle; it reconnects on its next batch

    def scan(self, match: str, count: int = 100) -> Iterator[bytes]:
        """SCAN for keys matching a glob; a dropped link mid-scan raises a Wurk error."""
        try:
            yield from self.client.scan_iter(match=match, count=count)
        except redis.exceptions.RedisError as exc:
            raise_translated(exc, self.masked_url)

    def sscan(self, key: str, count: int = 100) -> Iterator[bytes]:
        """SSCAN a set's members, translated as `scan()` is."""
        try:
            yield from self.client.sscan_iter(key, count=count)
        except redis.exceptions.RedisError as exc:
            raise_translated(exc, self.masked_url)

    def execute_batch(self, commands: list[tuple]) -> list:
        """Send commands in one write on a pooled connection and read every reply: one
        round trip without redis-py's pipeline bookkeeping (the push hot path).

        The first error reply is raised after all replies are read, so `write()` can
        tell a fail-over refusal from other errors.
        """
        link = self._take_link()
        try:
            replies = link.execute(commands)
        finally:
            self._give_link(link)
        for reply in replies:
            if isinstance(reply, Exception):
                raise reply
        return replies

    def _take_link(self) -> "DedicatedConnection":
        # Our own small LIFO of sockets: redis-py's pool checkout (a queue, a lock and
        # observability hooks) costs as much as the rest of a push together.
        self._link_slots.acquire()
        with self._links_lock:
            if self._links_pid != os.getpid():
                # Forked: those sockets are the parent's. Drop them, never close them.
                self._links, self._links_pid = [], os.getpid()
            if self._links:
                return self._links.pop()
        return self.dedicated()

    def _give_link(self, link: "DedicatedConnection") -> None:
        with self._links_lock:
            self._links.append(link)
        self._link_slots.release()

    def dedicated(self, socket_timeout_s: float | None = None) -> "DedicatedConnection":
        """A connection of its own (not from the pool), e.g. for a fetcher's hot path."""
        kwargs = dict(self.pool.connection_kwargs)
        if socket_timeout_s is not None:
            kwargs["socket_timeout"] = socket_timeout_s
        stale = None
        if self.sentinel:
            self.pool.watch.ensure_running()
            stale = self.pool.stale
        return DedicatedConnection(self.pool.connection_class(**kwargs), self.masked_url,
                                   stale)

    def script(self, name: str) -> "Script":
        """Return the Lua script `lua/<name>.lua`; called by SHA, reloaded on NOSCRIPT."""
        script = self._scripts.get(name)
        if script is None:
            script = self._scripts[name] = Script(self.client.register_script(lua_source(name)),
                                                  self.masked_url)
        return script

    def ping(self) -> bool:
        return self.read(self.client.ping)

    def config_get(self, name: str) -> bytes | None:
        """One CONFIG GET value; managed services that forbid CONFIG raise a Wurk error."""
        return self.read(self.client.config_get, name).get(name.encode())

    def server_version(self, *, retry: bool = True) -> tuple[int, ...]:
        """The server's version; `retry=False` tries once (a probe answering within its
        timeout must not wait out a second one)."""
        info = (self.read if retry else self.read_once)(self.client.info, "server")
        version = str(info.get("valkey_version") or info.get("redis_version") or "0")
        return tuple(int(part) for part in version.split(".") if part.isdigit())

    def close(self) -> None:
        if self.sentinel:
            sentinel.close(self.pool)
        else:
            self.pool.disconnect()
        with self._links_lock:
            links, self._links = self._links, []
        for link in links:
            link.close()


def translate(exc: BaseException, where: str) -> Exception:
    """The Wurk error for a redis-py one (Wurk's own and other errors pass unchanged)."""
    if isinstance(exc, CONNECTION_ERRORS):
        return RedisUnavailableError(f"Redis at {where}: {exc}")
    if isinstance(exc, redis.exceptions.NoScriptError):
        return ScriptMissingError(str(exc))
    if isinstance(exc, redis.exceptions.ResponseError) and "WRONGTYPE" in str(exc):
        return WrongTypeError(reply=str(exc))
    if isinstance(exc, redis.exceptions.RedisError):
        return RedisCommandError(f"Redis at {where} refused a command: {exc}", reply=str(exc))
    return exc if isinstance(exc, Exception) else RuntimeError(str(exc))


def _translate_reply(reply, where: str):
    return translate(reply, where) if isinstance(reply, Exception) else reply


class Pipeline(_RedisPipeline):
    """redis-py's pipeline whose errors, raised or returned in place, are Wurk's."""

    def __init__(self, *args, where: str):
        super().__init__(*args)
        self._where = where

    def execute(self, raise_on_error: bool = True) -> list:
        try:
            replies = super().execute(raise_on_error=raise_on_error)
        except redis.exceptions.RedisError as exc:
            raise_translated(exc, self._where)
        return [_translate_reply(reply, self._where) for reply in replies]


class Script:
    """A registered Lua script whose errors are Wurk's; `client=pipe` queues it."""

    def __init__(self, script, where: str):
        self._script = script
        self._where = where
        self.source = script.script

    def __call__(self, keys=(), args=(), client=None):
        try:
            return self._script(keys=list(keys), args=list(args), client=client)
        except redis.exceptions.RedisError as exc:
            raise_translated(exc, self._where)


def raise_translated(exc: BaseException, where: str):
    """Raise `exc` as a Wurk error, keeping it as the cause, or as it is."""
    translated = translate(exc, where)
    if translated is exc:
        raise exc  # `raise exc from exc` would make the error its own cause
    raise translated from exc


def _pack_python(command: tuple) -> bytes:
    out = [b"*%d\r\n" % len(command)]
    for arg in command:
        if isinstance(arg, str):
            arg = arg.encode()
        elif isinstance(arg, int):
            arg = b"%d" % arg
        elif isinstance(arg, float):
            arg = repr(arg).encode()
        elif not isinstance(arg, bytes):
            arg = bytes(arg)
        out.append(b"$%d\r\n%s\r\n" % (len(arg), arg))
    return b"".join(out)


_pack_command: Callable[[tuple], bytes]
try:
    from hiredis import pack_command as _hiredis_pack_command
except ImportError:  # hiredis is optional (the `fast` extra)
    _pack_command = _pack_python
else:
    _pack_command = cast(Callable[[tuple], bytes], _hiredis_pack_command)


def pack_commands(commands: list[tuple]) -> bytes:
    """RESP for a batch of commands whose arguments are str, bytes, int or float.

    Wurk's own commands never need what redis-py's packer adds per argument (splitting
    "CONFIG GET" style names, copying memoryviews), and skipping it is a tenth of a push.
    """
    if len(commands) == 1:
        return _pack_command(commands[0])
    return b"".join([_pack_command(command) for command in commands])


_connections: dict[tuple, RedisConnection] = {}
_connections_lock = threading.Lock()


def connection_for(config) -> RedisConnection:
    """The shared connection for a config's URL: one pool per process and URL.

    redis-py pools notice a fork by pid and reopen their sockets in the child.
    """
    pool_size = config.redis_pool_size or config.total_concurrency + 5
    key = (config.redis_url, pool_size, config.network_timeout_s,
           tuple(sorted(config.redis_options.items())))
    with _connections_lock:
        connection = _connections.get(key)
        if connection is None:
            connection = _connections[key] = RedisConnection(
                config.redis_url, pool_size=pool_size,
                socket_timeout_s=config.network_timeout_s, **dict(config.redis_options))
        return connection


def close_connections() -> None:
    """Close and forget every shared pool."""
    with _connections_lock:
        for connection in _connections.values():
            connection.close()
        _connections.clear()


class DedicatedConnection:
    """One socket used by one thread at a time, sending raw command batches.

    The hot path (fetch + acks) pays for neither redis-py's pipeline bookkeeping nor a
    pool checkout per job: a batch is packed, written once and its replies read back,
    one round trip. Error replies come back as exception instances, in place, so the
    socket never falls out of step with the replies.
    """

    def __init__(self, connection, where: str = "Redis", stale=None):
        self.connection = connection
        self.where = where  # the masked URL, for error messages
        # Under Sentinel: whether the socket is open on a server no longer the master.
        self.stale = stale

    def execute(self, commands: list[tuple]) -> list:
        connection, where = self.connection, self.where
        if self.stale is not None and self.stale(connection):
            connection.disconnect()  # the next send connects to the master named now
        try:
            connection.send_packed_command([pack_commands(commands)], check_health=False)
            replies = []
            for _ in commands:
                try:
                    replies.append(connection.read_response())
                except redis.exceptions.ResponseError as exc:
                    replies.append(translate(exc, where))
            return replies
        except BaseException as exc:
            connection.disconnect()  # a half-read reply must never be read as the next
            if isinstance(exc, redis.exceptions.RedisError):
                raise_translated(exc, where)
            raise

    def call(self, *command):
        reply = self.execute([command])[0]
        if isinstance(reply, Exception):
            raise reply
        return reply

    def close(self) -> None:
        self.connection.disconnect()
