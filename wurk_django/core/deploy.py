"""Deploy marks: one labelled minute per deploy, drawn on the dashboard's charts.

Every process of a fleet may call `mark()` at boot; the minute rounding, the 60 s
per-label lock and HSETNX leave a single mark per deploy.
"""

import logging
import subprocess
from datetime import UTC, date, datetime, timedelta

from . import keys
from .config import Config, get_default_config
from .redis import connection_for

logger = logging.getLogger("wurk")

LOCK_TTL_S = 60
MARKS_TTL_S = 7_776_000  # 90 days
GIT_TIMEOUT_S = 5


def git_label() -> str | None:
    """`git log -1 --format="%h %s"` in the current folder; None when git cannot say."""
    try:
        result = subprocess.run(["git", "log", "-1", "--format=%h %s"], capture_output=True,
                                text=True, timeout=GIT_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError):
        return None
    label = result.stdout.strip()
    return label if result.returncode == 0 and label else None


def stamp(at: datetime) -> str:
    """The mark's field: UTC, floored to the minute, ISO 8601 with a `Z`."""
    return f"{at:%Y-%m-%dT%H:%M}:00Z"


def mark(label: str | None = None, at: datetime | None = None,
         config: Config | None = None) -> str | None:
    """Record a deploy; the minute's stamp, or None when there is nothing to record.

    None when no label was given and git has none, or when the same label was marked
    in the last 60 s (another process of the same deploy won the lock).
    """
    label = label if label is not None else git_label()
    if not label:
        logger.info("wurk deploy mark skipped: no label and no git commit to name it")
        return None
    at = (at or datetime.now(UTC)).astimezone(UTC)
    at = at.replace(second=0, microsecond=0)
    when = stamp(at)
    connection = connection_for(config or get_default_config())
    client = connection.client
    # Not idempotent: a resent SET NX after a lost reply would find its own lock and
    # skip the mark, so it is sent once (write() resends only refused fail-over writes).
    if not connection.write(client.set, keys.deploy_lock(label), when, nx=True,
                            ex=LOCK_TTL_S):
        return None
    marks_key = keys.deploy_marks(at)

    def record():
        pipe = connection.pipeline(transaction=True)
        pipe.hsetnx(marks_key, when, label)
        pipe.expire(marks_key, MARKS_TTL_S)
        return pipe.execute()

    # HSETNX + EXPIRE give the same result however often they run: safe to resend.
    connection.read(record)
    return when


def fetch(day: date | datetime | str, config: Config | None = None) -> dict[str, str]:
    """The marks of one UTC day as `{stamp: label}`, oldest first."""
    return fetch_days([day], config)


def fetch_days(days, config: Config | None = None) -> dict[str, str]:
    """The marks of several UTC days in one round trip, as `{stamp: label}`, oldest first."""
    dates = [_as_date(day) for day in days]
    connection = connection_for(config or get_default_config())

    def read():
        pipe = connection.pipeline()
        for day in dates:
            pipe.hgetall(keys.deploy_marks(day))
        return pipe.execute()

    found = {}
    for fields in (connection.read(read) if dates else []):
        for when, label in fields.items():
            found[_text(when)] = _text(label)
    return dict(sorted(found.items()))


def days_between(start: datetime, end: datetime) -> list[date]:
    """Every UTC day touched by the window `start`..`end`."""
    first, last = start.astimezone(UTC).date(), end.astimezone(UTC).date()
    return [first + timedelta(days=n) for n in range((last - first).days + 1)]


def _as_date(day) -> date:
    if isinstance(day, datetime):
        return day.astimezone(UTC).date()
    if isinstance(day, date):
        return day
    return date.fromisoformat(str(day))


def _text(value) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
