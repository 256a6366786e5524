"""Redis Sentinel, part of the connection layer: the `redis+sentinel://` URL, a blocking
pool whose sockets go to the master the Sentinels name, and the watch that moves them to
a new master as soon as the Sentinels announce a fail-over."""

import logging
import os
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import parse_qsl, unquote, urlsplit

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry
from redis.sentinel import (
    MasterNotFoundError,
    Sentinel,
    SentinelConnectionPool,
    SentinelManagedConnection,
    SentinelManagedSSLConnection,
)

from .errors import ConfigurationError

logger = logging.getLogger("wurk")

SCHEMES = ("redis+sentinel", "rediss+sentinel")
DEFAULT_SENTINEL_PORT = 26379
# How often a process asks the Sentinels which server is the master. Sentinel itself
# tells old clients nothing until it demotes the old master, which can take ten seconds
# after the switch; every write a client sends there meanwhile is lost with it.
MASTER_CHECK_INTERVAL_S = 1.0
SWITCH_CHANNEL = "+switch-master"  # what a Sentinel publishes when the master changes
# Options of the URL's query string that are the Sentinels' own, not the master's.
SENTINEL_QUERY = ("sentinel_username", "sentinel_password")
# Connection options that also apply to the Sentinels themselves under rediss+sentinel://.
TLS_PREFIX = "ssl"


def is_sentinel_url(url: str) -> bool:
    return url.partition("://")[0].lower() in SCHEMES


@dataclass(frozen=True)
class SentinelTarget:
    """What a `redis+sentinel://` URL names."""

    sentinels: tuple[tuple[str, int], ...]
    service: str
    db: int = 0
    username: str | None = None
    password: str | None = None
    tls: bool = False
    sentinel_options: dict = field(default_factory=dict)

    def describe(self) -> str:
        """The URL without credentials, for logs and errors."""
        hosts = ",".join(f"{host}:{port}" for host, port in self.sentinels)
        scheme = SCHEMES[1] if self.tls else SCHEMES[0]
        return f"{scheme}://{hosts}/{self.service}/{self.db}"


def parse_url(url: str) -> SentinelTarget:
    """Read `redis+sentinel://[user:password@]host[:port][,host[:port]...]/master[/db]`.

    The user and password are the master's (as in a plain redis:// URL); the Sentinels'
    own credentials, if they have any, go in `?sentinel_password=...` (and
    `sentinel_username`). `rediss+sentinel://` speaks TLS to the master and the Sentinels.
    """
    scheme, _, rest = url.partition("://")
    parts = urlsplit(f"x://{rest}")
    credentials, _, hosts = parts.netloc.rpartition("@")
    username, _, password = credentials.partition(":") if credentials else ("", "", "")
    path = [unquote(piece) for piece in parts.path.split("/") if piece]
    if not path:
        raise ConfigurationError("redis_url: a redis+sentinel:// URL must name the master "
                                 "after the Sentinels, as in redis+sentinel://host:26379/"
                                 "mymaster", field="redis_url")
    if len(path) > 2 or (len(path) == 2 and not path[1].isdigit()):
        raise ConfigurationError("redis_url: after the master's name a redis+sentinel:// URL "
                                 "takes only a database number, as in /mymaster/0",
                                 field="redis_url")
    query = dict(parse_qsl(parts.query))
    unknown = sorted(set(query) - set(SENTINEL_QUERY))
    if unknown:
        raise ConfigurationError(f"redis_url: unknown option {unknown[0]!r} in a "
                                 f"redis+sentinel:// URL (known: {', '.join(SENTINEL_QUERY)}; "
                                 f"put connection options in redis_options)", field="redis_url")
    options = {key.removeprefix("sentinel_"): value for key, value in query.items()}
    return SentinelTarget(
        sentinels=tuple(_address(host) for host in hosts.split(",")), service=path[0],
        db=int(path[1]) if len(path) == 2 else 0, username=unquote(username) or None,
        password=unquote(password) or None, tls=scheme.lower() == SCHEMES[1],
        sentinel_options=options)


def _address(text: str) -> tuple[str, int]:
    host, _, port = text.strip().rpartition(":") if ":" in text else (text.strip(), "", "")
    host = host.strip("[]")  # an IPv6 literal: [::1]:26379
    if not host:
        raise ConfigurationError(f"redis_url: a Sentinel address is empty in the list "
                                 f"{text!r}", field="redis_url")
    if port and not port.isdigit():
        raise ConfigurationError(f"redis_url: the Sentinel port in {text!r} must be a "
                                 f"number", field="redis_url")
    return host, int(port) if port else DEFAULT_SENTINEL_PORT


# The type checker reads the mixin as the connection class it is mixed into.
if TYPE_CHECKING:
    _Mixin = SentinelManagedConnection
else:
    _Mixin = object


class _ReadOnlyKept(_Mixin):
    """redis-py turns a master's READONLY reply into a ConnectionError ("the previous
    master is now a slave"). Wurk keeps it a refusal: the write was not applied, so
    `RedisConnection.write()` may send it again once, where after a lost link it may not.
    The socket stays open until the whole reply batch is read; the pool and the watch
    close it once the Sentinels name the new master."""

    def read_response(self, *args, **kwargs):
        return super(SentinelManagedConnection, self).read_response(*args, **kwargs)

    # redis-py's `send_packed_command` opens a closed socket through
    # `connect_check_health`, not `connect()`, so a socket used outside the pool (Wurk's
    # dedicated links) would open on the default localhost:6379 instead of the master.
    def connect_check_health(self, *args, **kwargs):
        if not self._sock and not self._addressed:
            self.host, self.port = self.connection_pool.get_master_address()
        self._addressed = False
        return super().connect_check_health(*args, **kwargs)

    def connect_to(self, address):
        self._addressed = True  # redis-py's own path: the Sentinels were just asked
        super().connect_to(address)

    _addressed = False


class MasterConnection(_ReadOnlyKept, SentinelManagedConnection):
    pass


class MasterSSLConnection(_ReadOnlyKept, SentinelManagedSSLConnection):
    pass


class Sentinels(Sentinel):
    """redis-py's Sentinel client, whose "no master" error says briefly what each
    Sentinel answered (redis-py's own repeats every client's whole configuration)."""

    def discover_master(self, service_name):
        problems = []
        for index, sentinel in enumerate(self.sentinels):
            kwargs = sentinel.connection_pool.connection_kwargs
            where = f"{kwargs.get('host')}:{kwargs.get('port')}"
            try:
                masters = cast(dict[str, Any], sentinel.sentinel_masters())
            except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as exc:
                problems.append(f"{where}: {exc}")
                continue
            state = masters.get(service_name)
            if state and self.check_master_state(state, service_name):
                # The Sentinel that answered is asked first next time, as redis-py does.
                self.sentinels[0], self.sentinels[index] = sentinel, self.sentinels[0]
                return state["ip"], state["port"]
            problems.append(f"{where}: no master {service_name!r} that is up")
        raise MasterNotFoundError(f"No master found for {service_name!r}: "
                                  f"{'; '.join(problems)}")


class SentinelPool(SentinelConnectionPool, redis.BlockingConnectionPool):
    """redis-py's Sentinel pool with the blocking checkout Wurk uses for every pool.

    A socket released while the master has changed is closed rather than kept (redis-py's
    `owns_connection`), idle ones when the change is seen; `watch` is started on the
    first checkout of each process, since a thread does not survive fork().
    """

    def __init__(self, target: SentinelTarget, manager: Sentinel, **kwargs):
        self.watch = MasterWatch(self, target.describe())
        super().__init__(target.service, manager, **kwargs)

    def get_connection(self, *args, **kwargs):
        self.watch.ensure_running()
        return super().get_connection(*args, **kwargs)

    def stale(self, connection) -> bool:
        """True if `connection` is open on a server that is no longer the master."""
        master = self.master_address
        return (master is not None and connection._sock is not None
                and (connection.host, connection.port) != master)


class MasterWatch:
    """Asks the Sentinels for the master on a daemon thread of its own: at once when one
    of them announces a switch (`+switch-master`, subscribed on the Sentinel that last
    answered), and every second anyway, in case the announcement was missed.

    A change of address closes the pool's idle sockets (redis-py does that in
    `get_master_address`); busy ones are closed as they come back, and Wurk's dedicated
    links check `SentinelPool.stale` before each batch. A Sentinel outage is logged
    when it starts and when it ends, never once a second.
    """

    def __init__(self, pool: "SentinelPool", where: str,
                 interval_s: float = MASTER_CHECK_INTERVAL_S):
        self.pool = pool
        self.where = where
        self.interval_s = interval_s
        self._pid: int | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._failing_since: float | None = None
        self._pubsub: redis.client.PubSub | None = None

    def ensure_running(self) -> None:
        if self._pid == os.getpid() or self._stop.is_set():
            return
        with self._lock:
            if self._pid == os.getpid():
                return
            self._pid, self._pubsub = os.getpid(), None  # a parent's socket is not ours
            threading.Thread(target=self._run, name="wurk-sentinel-watch", daemon=True).start()

    def _run(self) -> None:
        pid = os.getpid()
        while not self._stop.is_set() and os.getpid() == pid:
            self._wait_for_news()
            if not self._stop.is_set():
                self.check()
        self._drop_subscription()

    def _wait_for_news(self) -> None:
        """Up to one interval; less when a Sentinel announces a switch."""
        try:
            pubsub = self._pubsub
            if pubsub is None:
                pubsub = self._pubsub = self.pool.sentinel_manager.sentinels[0].pubsub()
                pubsub.subscribe(SWITCH_CHANNEL)
            pubsub.get_message(ignore_subscribe_messages=True, timeout=self.interval_s)
        except Exception:  # noqa: BLE001 (see below)
            # A Sentinel gone (a RedisError), or `close()` on another thread shutting the
            # socket under the read (redis-py then raises whatever its parser hits).
            self._drop_subscription()  # the next round subscribes on the Sentinel that answers
            self._stop.wait(self.interval_s)

    def _drop_subscription(self) -> None:
        pubsub, self._pubsub = self._pubsub, None
        if pubsub is not None:
            try:
                pubsub.close()
            except Exception as exc:  # noqa: BLE001 (closed already, or half-closed by close())
                logger.debug("Sentinel subscription closed with %r", exc)

    def check(self) -> None:
        before = self.pool.master_address
        try:
            now = self.pool.get_master_address()
        except redis.exceptions.RedisError as exc:
            if self._failing_since is None:
                self._failing_since = time.monotonic()
                logger.warning("Sentinels at %s did not name a master: %s", self.where, exc)
            return
        if self._failing_since is not None:
            logger.warning("Sentinels at %s answer again after %.1f s", self.where,
                           time.monotonic() - self._failing_since)
            self._failing_since = None
        if before is not None and now != before:
            logger.warning("Redis fail-over at %s: the master moved from %s:%s to %s:%s",
                           self.where, *before, *now)

    def stop(self) -> None:
        self._stop.set()


def sentinel_pool(url: str, options: dict, *, max_connections: int, timeout_s: float,
                  socket_timeout_s: float) -> SentinelPool:
    """The pool for a `redis+sentinel://` URL; `options` are the master's connection
    options (Wurk's and the user's redis_options), TLS ones also used for the Sentinels."""
    target = parse_url(url)
    options = dict(options)
    sentinel_kwargs = options.pop("sentinel_kwargs", None)
    if sentinel_kwargs is None:
        sentinel_kwargs = _sentinel_kwargs(target, options, socket_timeout_s)
    manager = Sentinels(target.sentinels, sentinel_kwargs=sentinel_kwargs)
    if target.username:
        options.setdefault("username", target.username)
    if target.password:
        options.setdefault("password", target.password)
    return SentinelPool(
        target, manager, db=target.db, max_connections=max_connections, timeout=timeout_s,
        socket_timeout=socket_timeout_s, retry=Retry(NoBackoff(), 0),
        connection_class=MasterSSLConnection if target.tls else MasterConnection, **options)


def _sentinel_kwargs(target: SentinelTarget, options: dict, socket_timeout_s: float) -> dict:
    # Each Sentinel is asked once per discovery: redis-py moves on to the next one itself.
    kwargs = {"socket_timeout": socket_timeout_s,
              "socket_connect_timeout": options.get("socket_connect_timeout",
                                                    socket_timeout_s),
              "retry": Retry(NoBackoff(), 0), **target.sentinel_options}
    if target.tls:
        kwargs["ssl"] = True
        kwargs.update({key: value for key, value in options.items()
                       if key.startswith(TLS_PREFIX)})
    return kwargs


def close(pool: SentinelPool) -> None:
    pool.watch.stop()
    pool.disconnect()
    pool.sentinel_manager.close()
