"""Periodic jobs (cron loops) as stored in Redis (ent.md §2.3): list, detail, pause, run now.

The cron engine writes these keys; this module only reads them, flips `paused` and
pushes a one-off run. With no loops registered every read is simply empty.
"""

from dataclasses import dataclass, field

from ..client import Client
from ..payload import loads
from .base import ApiObject, text

# TODO(cron): move to keys.py when the cron engine lands its key helpers there.
PERIODIC = "periodic"
LEADER = "dear-leader"
HISTORY_CAP = 25


def loop_key(lid: str) -> str:
    return f"loops:{lid}"


def loop_history_key(lid: str) -> str:
    return f"loop-history:{lid}"


@dataclass
class Loop:
    """One loop's hash: schedule, class, options, zone, paused, last and next fire."""

    lid: str
    schedule: str
    klass: str
    options: dict
    tz: str
    paused: bool
    last_fired_at: int | None
    next_fire_at: int | None
    history: list[tuple[int, str]] = field(default_factory=list)

    @property
    def queue(self) -> str | None:
        return self.options.get("queue")

    @property
    def args(self) -> list:
        args = self.options.get("args", [])
        return args if isinstance(args, list) else [args]

    @property
    def retry(self):
        return self.options.get("retry")


class LoopSet(ApiObject):
    """The members of `periodic`; a lid is used as a key suffix only after SISMEMBER."""

    def __iter__(self):
        lids = sorted(text(m) for m in self._read(self.redis.smembers, PERIODIC))

        def build(pipe):
            for lid in lids:
                pipe.hgetall(loop_key(lid))

        hashes = self._pipelined(build) if lids else []
        for lid, fields in zip(lids, hashes):
            if fields:  # a lid whose hash is gone was unregistered mid-read
                yield _loop(lid, fields)

    @property
    def size(self) -> int:
        return int(self._read(self.redis.scard, PERIODIC))

    def fetch(self, lid: str, *, with_history: bool = True) -> Loop | None:
        """The loop and its last 25 fires, newest first; None for an unknown lid."""
        if not isinstance(lid, str) or not self._read(self.redis.sismember, PERIODIC, lid):
            return None

        def build(pipe):
            pipe.hgetall(loop_key(lid))
            pipe.lrange(loop_history_key(lid), 0, HISTORY_CAP - 1)

        fields, history = self._pipelined(build)
        if not fields:
            return None
        loop = _loop(lid, fields)
        if with_history:
            loop.history = [entry for entry in map(_history_entry, history) if entry]
        return loop

    def leader(self) -> str | None:
        """The identity of the process holding cluster leadership, if any."""
        return text(self._read(self.redis.get, LEADER))

    def set_paused(self, lid: str, paused: bool) -> bool:
        """Pause or resume a loop (`HSET paused 1|0`); False for an unknown lid."""
        if self.fetch(lid, with_history=False) is None:
            return False
        self._write(self.redis.hset, loop_key(lid), "paused", "1" if paused else "0")
        return True

    def run_now(self, lid: str) -> str | None:
        """Push the loop's job once, leaving its marks and history alone; the jid."""
        loop = self.fetch(lid, with_history=False)
        if loop is None:
            return None
        item = {"class": loop.klass, "args": loop.args, "transactional": False}
        for option in ("queue", "retry"):
            if loop.options.get(option) is not None:
                item[option] = loop.options[option]
        return Client(self.config, self.connection).push(item)


def _loop(lid: str, fields: dict) -> Loop:
    values = {text(k): text(v) for k, v in fields.items()}
    try:
        options = loads(values.get("options") or "{}")
    except ValueError:
        options = {}
    return Loop(lid=lid, schedule=values.get("schedule") or "", klass=values.get("klass") or "",
                options=options if isinstance(options, dict) else {},
                tz=values.get("tz") or "", paused=values.get("paused") == "1",
                last_fired_at=_epoch(values.get("lf")), next_fire_at=_epoch(values.get("nf")))


def _epoch(value) -> int | None:
    try:
        return int(value) if value else None
    except ValueError:
        return None


def _history_entry(raw) -> tuple[int, str] | None:
    try:
        fired_at, jid = loads(raw)
        return int(fired_at), str(jid)
    except (ValueError, TypeError):
        return None
