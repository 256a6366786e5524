"""`snapshots`: the history snapshot stream (WURK['RETAIN_HISTORY']) for the History page."""

import time
from datetime import UTC, datetime

from ...core.api import history
from ...core.config import get_default_config
from ...core.history import FIELDS
from ..auth import ApiError, endpoint
from .overview import marks_between

# The History page's ranges, in seconds: an hour to the stream's ~3.5 days at 30 s.
RANGES_S = (3_600, 21_600, 86_400, 259_200)


def _range_s(request) -> int:
    try:
        range_s = int(request.GET.get("range", RANGES_S[0]))
    except (TypeError, ValueError):
        range_s = 0
    if range_s not in RANGES_S:
        raise ApiError("invalid_request", f"range must be one of {RANGES_S} seconds.")
    return range_s


def _value(entry: dict, name: str):
    value = entry.get(name)
    is_number = isinstance(value, (int, float)) and not isinstance(value, bool)
    return value if is_number else None


def snapshots(request):
    """The snapshots of the last `range` seconds, oldest first, as `[at_ms, *fields]` rows
    (at most the stream's length)."""
    range_s = _range_s(request)
    entries = history.recent(history.MAX_LIMIT, since=time.time() - range_s)
    rows = [[int(entry["at"] * 1000), *(_value(entry, name) for name in FIELDS)]
            for entry in entries]
    marks = []
    if rows:
        starts, ends = (datetime.fromtimestamp(rows[i][0] / 1000, UTC) for i in (0, -1))
        marks = [mark for mark in marks_between(starts, ends)
                 if mark["at_ms"] is not None and rows[0][0] <= mark["at_ms"] <= rows[-1][0]]
    return {"interval_s": get_default_config().retain_history_s, "range_s": range_s,
            "fields": list(FIELDS), "items": rows, "marks": marks}


urls = {"snapshots": endpoint(GET=snapshots)}
