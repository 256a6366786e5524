"""Manual operations on stored cron loops (ent §2.7): list, pause, unpause, fire, history,
and the plain-text tables `manage.py wurk_cron` prints."""

import time
from dataclasses import dataclass, field
from datetime import datetime, timezone

from . import keys
from .client import Client
from .cron import HISTORY_CAP, loop_options, push_item, record_history
from .cron_schedule import lenient_zone, schedule_for
from .payload import loads


@dataclass
class LoopInfo:
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
            return schedule_for(self.schedule, self.tz).next_after(time.time())
        except (ValueError, KeyError):  # an expression this side cannot parse
            return None


def _text(value) -> str | None:
    return None if value is None else value.decode("utf-8", "replace")


def _epoch(value: str | None) -> int | None:
    try:
        return int(value) if value else None
    except ValueError:
        return None


def loop_from_hash(lid: str, raw_fields: dict) -> LoopInfo | None:
    """Read a `loops:<lid>` hash; None if it is gone or was never complete."""
    fields = {_text(k): _text(v) for k, v in raw_fields.items()}
    if not fields.get("schedule"):
        return None
    return LoopInfo(lid=lid, schedule=fields["schedule"], klass=fields.get("klass") or "",
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


def fetch(connection, lid: str) -> LoopInfo | None:
    """The loop `lid`, or None if no such loop is registered."""
    client = connection.client
    if not connection.read(client.sismember, keys.PERIODIC, lid):
        return None
    return loop_from_hash(lid, connection.read(client.hgetall, keys.loop(lid)))


def loops(connection) -> list[LoopInfo]:
    """Every registered loop, ordered by class then lid."""
    lids = sorted(m.decode() for m in connection.read(connection.client.smembers,
                                                      keys.PERIODIC))
    found = [loop for loop in (fetch(connection, lid) for lid in lids) if loop is not None]
    return sorted(found, key=lambda loop: (loop.klass, loop.lid))


def pause(connection, lid: str) -> bool:
    """Stop firing a loop until unpaused; False for an unknown lid."""
    if fetch(connection, lid) is None:
        return False
    connection.write(connection.client.hset, keys.loop(lid), "paused", "1")
    return True


def unpause(connection, lid: str) -> bool:
    """Fire a paused loop again from its next slot: occurrences due while it was paused
    are not made up for. False for an unknown lid."""
    loop = fetch(connection, lid)
    if loop is None:
        return False
    upcoming = schedule_for(loop.schedule, loop.tz).next_after(time.time())
    pipe = connection.pipeline(transaction=True)
    pipe.hset(keys.loop(lid), "paused", "0")
    if upcoming is None:
        pipe.hdel(keys.loop(lid), "nf")
    else:
        pipe.hset(keys.loop(lid), "nf", str(upcoming))
    pipe.execute()
    return True


def fire(config, connection, lid: str) -> str | None:
    """Push the loop's job now, skipping the leader gate, the due check and the claim;
    then move its marks past now and record it. The jid, or None for an unknown lid."""
    loop = fetch(connection, lid)
    if loop is None:
        return None
    jid = Client(config, connection).push(push_item(lid, loop.klass, loop.options))
    now = int(time.time())
    upcoming = schedule_for(loop.schedule, loop.tz).next_after(now)
    pipe = connection.pipeline(transaction=True)
    pipe.hset(keys.loop(lid), "lf", str(now))
    if upcoming is None:
        pipe.hdel(keys.loop(lid), "nf")
    else:
        pipe.hset(keys.loop(lid), "nf", str(upcoming))
    pipe.execute()
    if jid is not None:
        record_history(connection, lid, now, jid)
    return jid


def history(connection, lid: str) -> list[tuple[int, str]]:
    """The loop's last fires, newest first: (epoch seconds, jid)."""
    raw = connection.read(connection.client.lrange, keys.loop_history(lid), 0, HISTORY_CAP - 1)
    return [entry for entry in map(history_entry, raw) if entry is not None]


# --- tables -----------------------------------------------------------------------

def _times(epoch: int | None, tz: str) -> tuple[str, str]:
    """An instant in the loop's zone and in UTC."""
    if epoch is None:
        return "-", "-"
    utc = datetime.fromtimestamp(epoch, timezone.utc)
    local = utc.astimezone(lenient_zone(tz))
    return f"{local:%Y-%m-%d %H:%M:%S} {tz or 'UTC'}", f"{utc:%Y-%m-%d %H:%M:%S} UTC"


def table(rows: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip()
                     for row in rows)


def loops_table(found: list[LoopInfo]) -> str:
    rows = [["LID", "CLASS", "SCHEDULE", "STATE", "NEXT FIRE (LOOP TZ)", "NEXT FIRE (UTC)",
             "LAST FIRE (UTC)"]]
    for loop in found:
        upcoming = None if loop.paused else loop.next_fire_at
        if upcoming is None and not loop.paused:
            upcoming = schedule_for(loop.schedule, loop.tz).next_after(time.time())
        rows.append([loop.lid, loop.klass, loop.schedule, "paused" if loop.paused else "active",
                     *_times(upcoming, loop.tz), _times(loop.last_fired_at, "")[1]])
    return table(rows)


def history_table(loop: LoopInfo, entries: list[tuple[int, str]]) -> str:
    rows = [["FIRED (LOOP TZ)", "FIRED (UTC)", "JID"]]
    rows += [[*_times(fired_at, loop.tz), jid] for fired_at, jid in entries]
    return table(rows)
