"""Periodic jobs (cron loops) as stored in Redis: the one place that lists and reads loops,
pauses, unpauses and fires one, and reads its history, for the dashboard and `wurk_cron`.

The cron engine (`core/cron.py`) registers loops and fires them on the leader's tick; it
never uses this module. With no loops registered every read is simply empty.
"""

import time
from dataclasses import dataclass, field

from .. import keys
from ..client import Client
from ..cron import HISTORY_CAP, loop_options, push_item, record_history
from ..cron_schedule import schedule_for
from ..payload import loads
from .base import ApiObject, WrongTypeError, text


@dataclass
class Loop:
    """One stored loop, as its hash says (and, when read with it, its last fires)."""

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
            return self.next_slot(time.time())
        except (ValueError, KeyError):  # an expression this side cannot parse
            return None

    def next_slot(self, after: float) -> int | None:
        """The loop's first occurrence after epoch `after`; None if it never fires again."""
        return schedule_for(self.schedule, self.tz).next_after(after)


def _epoch(value: str | None) -> int | None:
    try:
        return int(value) if value else None
    except ValueError:
        return None


def loop_from_hash(lid: str, raw_fields: dict) -> Loop | None:
    """Read a `loops:<lid>` hash; None if it is gone or was never complete."""
    fields = {text(k): text(v) for k, v in raw_fields.items()}
    if not fields.get("schedule"):
        return None
    return Loop(lid=lid, schedule=fields["schedule"], klass=fields.get("klass") or "",
                options=loop_options(fields.get("options")), tz=fields.get("tz") or "",
                paused=fields.get("paused") == "1", last_fired_at=_epoch(fields.get("lf")),
                next_fire_at=_epoch(fields.get("nf")))


def history_entry(raw: bytes) -> tuple[int, str] | None:
    """One `loop-history:<lid>` entry as (epoch seconds, jid); None if unreadable."""
    try:
        fired_at, jid = loads(raw)
        return int(fired_at), str(jid)
    except (ValueError, TypeError):
        return None


class LoopSet(ApiObject):
    """The members of `periodic`: iterate for every loop, `fetch(lid)` for one with its
    history, `pause`, `unpause` and `fire` to act on one. A lid is used as a key suffix only
    after SISMEMBER.

    While iterating, a loop whose hash key holds another type is left out and described in
    `problems`; `fetch` and the actions raise WrongTypeError naming that key.
    """

    def __init__(self, config=None):
        super().__init__(config)
        self.problems: list[str] = []

    def __iter__(self):
        lids = sorted(text(m) for m in self._read(self.redis.smembers, keys.PERIODIC))

        def build(pipe):
            for lid in lids:
                pipe.hgetall(keys.loop(lid))

        hashes = self._pipelined(build, partial=True) if lids else []
        self.problems = [str(found) for found in hashes if isinstance(found, WrongTypeError)]
        readable = [(lid, found) for lid, found in zip(lids, hashes)
                    if not isinstance(found, WrongTypeError)]
        # A lid without a hash was unregistered between the two reads: skipped.
        loops = [loop for loop in (loop_from_hash(*pair) for pair in readable) if loop]
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
        loop = loop_from_hash(lid, fields)
        if loop is not None and with_history:
            loop.history = [entry for entry in map(history_entry, history) if entry]
        return loop

    def leader(self) -> str | None:
        """The identity of the process holding cluster leadership, if any."""
        return text(self._read(self.redis.get, keys.LEADER))

    def pause(self, lid: str) -> bool:
        """Stop firing a loop until unpaused; False for an unknown lid."""
        if self.fetch(lid, with_history=False) is None:
            return False
        self._write(self.redis.hset, keys.loop(lid), "paused", "1")
        return True

    def unpause(self, lid: str) -> bool:
        """Fire a paused loop again from its next slot: occurrences due while it was paused
        are not made up for. False for an unknown lid."""
        loop = self.fetch(lid, with_history=False)
        if loop is None:
            return False
        self._set_marks(lid, loop.next_slot(time.time()), paused="0")
        return True

    def fire(self, lid: str) -> str | None:
        """Push the loop's job now, skipping the leader gate, the due check and the claim;
        then move its marks past now and record the fire in its history, as a tick does.
        The jid (None if a middleware halted the push), or None for an unknown lid.

        The push is not wrapped in `_write`: its fail-over resend could push the job twice.
        """
        loop = self.fetch(lid, with_history=False)
        if loop is None:
            return None
        jid = Client(self.config, self.connection).push(push_item(lid, loop.klass, loop.options))
        now = int(time.time())
        self._set_marks(lid, loop.next_slot(now), lf=str(now))
        if jid is not None:
            record_history(self.connection, lid, now, jid)
        return jid

    def _set_marks(self, lid: str, upcoming: int | None, **fields: str) -> None:
        """Write `fields` and the next fire in one transaction; no next fire: none stored."""
        def build(pipe):
            if upcoming is None:
                pipe.hset(keys.loop(lid), mapping=fields)
                pipe.hdel(keys.loop(lid), "nf")
            else:
                pipe.hset(keys.loop(lid), mapping={**fields, "nf": str(upcoming)})

        self._pipelined(build, transaction=True, write=True)
