"""Plumbing shared by the data API: config and connection lookup, the retry rules, paging,
and keys of the wrong type reported by name."""

import math
from dataclasses import dataclass, field
from datetime import datetime
from typing import overload

from ..config import Config, get_default_config
from ..errors import WrongTypeError
from ..redis import RedisConnection, connection_for

DEFAULT_PAGE_SIZE = 25
CHUNK_SIZE = 500
# The type each read command needs, to say what a key of another type should have held.
EXPECTED_TYPES = {
    **dict.fromkeys(("llen", "lrange", "lindex"), "list"),
    **dict.fromkeys(("zcard", "zrange", "zscan", "zcount"), "sorted set"),
    **dict.fromkeys(("scard", "smembers", "sismember", "sscan"), "set"),
    **dict.fromkeys(("hget", "hmget", "hgetall", "hlen"), "hash"),
    **dict.fromkeys(("get", "mget"), "string"),
}
TYPE_NAMES: dict[str | None, str] = {"zset": "sorted set"}


def is_wrong_type(exc: BaseException) -> bool:
    return isinstance(exc, WrongTypeError)


@overload
def text(value: None) -> None: ...
@overload
def text(value: str | bytes | bytearray | memoryview) -> str: ...
def text(value):
    """A Redis reply as str; the pool may or may not decode responses."""
    if value is None or isinstance(value, str):
        return value
    return value.decode("utf-8", "replace")


def as_bytes(value) -> bytes:
    return value.encode("utf-8") if isinstance(value, str) else bytes(value)


def epoch_seconds(at) -> float:
    """An absolute time as epoch seconds: an aware datetime or a number."""
    if isinstance(at, datetime):
        return at.timestamp()
    if isinstance(at, (int, float)) and not isinstance(at, bool):
        return float(at)
    raise TypeError(f"a time must be a datetime or epoch seconds, got {type(at).__name__}")


def check_paging(number: int, page_size: int) -> None:
    if not isinstance(number, int) or number < 1:
        raise ValueError(f"page numbers start at 1, got {number!r}")
    if not isinstance(page_size, int) or page_size < 1:
        raise ValueError(f"page_size must be a positive whole number, got {page_size!r}")


@dataclass
class Page:
    """One page of a queue or sorted set, with the collection's size when it was read."""

    entries: list
    total: int
    number: int
    page_size: int

    @property
    def pages(self) -> int:
        return max(math.ceil(self.total / self.page_size), 1)

    def __iter__(self):
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)


@dataclass
class SearchResult:
    """Entries matching a search; `truncated` when a hit or scan cap stopped it early."""

    entries: list = field(default_factory=list)
    truncated: bool = False

    def __iter__(self):
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)


class ApiObject:
    """Holds a config and its shared connection; every read and write goes through here.

    Reads use `connection.read` (retried once on a dropped link); writes use
    `connection.write`, which never resends after a dropped link, so a push or a
    removal is never doubled. Both rethrow connection failures as RedisUnavailableError.
    """

    def __init__(self, config: Config | None = None):
        self.config = config or get_default_config()
        self.connection: RedisConnection = connection_for(self.config)

    @property
    def redis(self):
        return self.connection.client

    def _read(self, fn, *args, **kwargs):
        """Run a read; WRONGTYPE becomes a WrongTypeError naming the key (the first arg)."""
        try:
            return self.connection.read(fn, *args, **kwargs)
        except WrongTypeError as exc:
            if exc.key is not None:
                raise
            key = text(args[0]) if args and isinstance(args[0], (str, bytes)) else None
            raise self._wrong_type(getattr(fn, "__name__", ""), key) from exc

    def _write(self, fn, *args, **kwargs):
        return self.connection.write(fn, *args, **kwargs)

    def _pipelined(self, build, *, transaction: bool = False, write: bool = False,
                   partial: bool = False) -> list:
        """Run `build(pipe)` in a fresh pipeline, so a retried read starts clean.

        A reply that is WRONGTYPE raises a WrongTypeError naming its key; with `partial`
        the error takes that reply's place instead, so the other replies still count.
        Any other error reply is raised as it is.
        """
        def run():
            pipe = self.connection.pipeline(transaction=transaction)
            build(pipe)
            commands = [args for args, _options in pipe.command_stack]
            replies = pipe.execute(raise_on_error=False)
            for _args, reply in zip(commands, replies):
                if isinstance(reply, Exception) and not is_wrong_type(reply):
                    raise reply
            return commands, replies

        commands, replies = self._write(run) if write else self._read(run)
        checked = []
        for args, reply in zip(commands, replies):
            if isinstance(reply, Exception):
                reply = self._wrong_type(str(args[0]), text(args[1]) if len(args) > 1 else None)
                if not partial:
                    raise reply
            checked.append(reply)
        return checked

    def _wrong_type(self, command: str, key: str | None) -> WrongTypeError:
        found = None
        if key is not None:
            found = text(self.connection.read(self.redis.type, key))
        return WrongTypeError(key, TYPE_NAMES.get(found, found),
                              EXPECTED_TYPES.get(command.lower()))

    def _set_members(self, key: str) -> list[str]:
        """The members of a set, read with SSCAN, sorted; WrongTypeError names the key."""
        def sscan(name):
            return [text(member) for member in self.connection.sscan(name)]

        return sorted(set(self._read(sscan, key)))
