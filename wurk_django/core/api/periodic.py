"""Periodic jobs (cron loops) as stored in Redis (ent.md §2.3): list, detail, pause, run now.

The cron engine (`core/cron.py`) writes these keys; pause and resume go through its
manual operations (`core/cron_ops.py`), so resuming skips the occurrences missed
while paused. With no loops registered every read is simply empty.
"""

import time
from dataclasses import dataclass, field

from .. import cron_ops, keys
from ..client import Client
from ..cron import HISTORY_CAP, loop_options, push_item
from ..cron_schedule import schedule_for
from ..payload import loads
from .base import ApiObject, text


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

    @property
    def upcoming(self) -> int | None:
        """The next fire: none while paused; computed when the engine has not stored it."""
        if self.paused:
            return None
        if self.next_fire_at is not None:
            return self.next_fire_at
        try:
            return schedule_for(self.schedule, self.tz).next_after(time.time())
        except (ValueError, KeyError):  # an expression this side cannot parse
            return None


class LoopSet(ApiObject):
    """The members of `periodic`; a lid is used as a key suffix only after SISMEMBER."""

    def __iter__(self):
        lids = sorted(text(m) for m in self._read(self.redis.smembers, keys.PERIODIC))

        def build(pipe):
            for lid in lids:
                pipe.hgetall(keys.loop(lid))

        hashes = self._pipelined(build) if lids else []
        # A lid without a hash was unregistered between the two reads: skipped.
        loops = [loop for loop in map(_loop, lids, hashes) if loop is not None]
        return iter(sorted(loops, key=lambda loop: (loop.klass, loop.lid)))

    @property
    def size(self) -> int:
        return int(self._read(self.redis.scard, keys.PERIODIC))

    def fetch(self, lid: str, *, with_history: bool = True) -> Loop | None:
        """The loop and its last 25 fires, newest first; None for an unknown lid."""
        if not isinstance(lid, str) or not self._read(self.redis.sismember, keys.PERIODIC, lid):
            return None

        def build(pipe):
            pipe.hgetall(keys.loop(lid))
            pipe.lrange(keys.loop_history(lid), 0, HISTORY_CAP - 1)

        fields, history = self._pipelined(build)
        loop = _loop(lid, fields)
        if loop is not None and with_history:
            loop.history = [entry for entry in map(_history_entry, history) if entry]
        return loop

    def leader(self) -> str | None:
        """The identity of the process holding cluster leadership, if any."""
        return text(self._read(self.redis.get, keys.LEADER))

    def set_paused(self, lid: str, paused: bool) -> bool:
        """Pause or resume a loop; False for an unknown lid."""
        operation = cron_ops.pause if paused else cron_ops.unpause
        return bool(self._write(operation, self.connection, lid))

    def run_now(self, lid: str) -> str | None:
        """Push the loop's job once, leaving its marks and history alone (spec §1.8);
        the jid, or None for an unknown lid."""
        loop = self.fetch(lid, with_history=False)
        if loop is None:
            return None
        return Client(self.config, self.connection).push(push_item(lid, loop.klass,
                                                                   loop.options))


def _loop(lid: str, fields: dict) -> Loop | None:
    values = {text(k): text(v) for k, v in fields.items()}
    if not values.get("schedule"):
        return None
    return Loop(lid=lid, schedule=values.get("schedule") or "", klass=values.get("klass") or "",
                options=loop_options(values.get("options")), tz=values.get("tz") or "",
                paused=values.get("paused") == "1", last_fired_at=_epoch(values.get("lf")),
                next_fire_at=_epoch(values.get("nf")))


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
