"""Reading the history snapshot stream (`history:metrics`), written by the leader every
`retain_history_s` seconds (core/history.py) or by Sidekiq Enterprise's own snapshot."""

import math

from .. import keys
from .base import ApiObject, text

DEFAULT_LIMIT = 1_000
MAX_LIMIT = 10_000  # the stream is trimmed to about this many entries


def recent(limit: int = DEFAULT_LIMIT, config=None, *, since: float | None = None) -> list[dict]:
    """The newest `limit` snapshots (taken at or after `since`, epoch seconds), oldest
    first: `{"at": epoch seconds, "processed": n, ...}`. Numbers come back as numbers; a
    field Wurk does not write is passed through as text, so entries Sidekiq Enterprise
    wrote read as they are."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise ValueError(f"limit must be a whole number from 1 to {MAX_LIMIT}, got {limit!r}")
    oldest = "-" if since is None else str(max(int(since * 1000), 0))  # an entry id's time
    api = ApiObject(config)
    entries = api._read(api.redis.xrevrange, keys.HISTORY_METRICS, "+", oldest, count=limit)
    return [_entry(entry_id, fields) for entry_id, fields in reversed(entries)]


def _entry(entry_id, fields: dict) -> dict:
    milliseconds = int(str(text(entry_id)).partition("-")[0])
    entry: dict = {"at": milliseconds / 1000}
    for name, value in fields.items():
        entry[str(text(name))] = _number(str(text(value)))
    return entry


def _number(value: str):
    try:
        return int(value)
    except ValueError:
        pass
    try:
        number = float(value)
    except ValueError:
        return value
    return number if math.isfinite(number) else value  # "nan" stays text: JSON has no NaN
