"""`limiters`: rate limiters with their current use against their limit (paged, filtered
by name and type), one limiter with its metrics, and reset, through the data API's
LimiterSet. Reading a limiter never registers it or touches its state.
"""

import time

from ...core.api.limiters import TYPES, LimiterRecord, LimiterSet
from ..auth import ApiError, endpoint
from .common import Paging, finite, json_text, result

MAX_QUERY_CHARS = 200


def _ms(seconds) -> int | None:
    value = finite(float(seconds)) if isinstance(seconds, (int, float)) else None
    return None if value is None else int(value * 1000)


def _amount(value):
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def limiter_item(record: LimiterRecord) -> dict:
    return {
        "name": record.name, "type": record.type, "known": record.known,
        "limit": _amount(record.limit), "used": _amount(record.used),
        "available": _amount(record.available), "reset_at_ms": _ms(record.reset_at),
        "options": {name: json_text(value) for name, value in sorted(record.options.items())},
    }


def metrics(record: LimiterRecord) -> dict:
    """Counts and times in seconds; Wurk's millisecond fields when it wrote them, else
    Sidekiq Enterprise's whole seconds."""
    m = record.metrics

    def seconds(whole: str, precise: str) -> float:
        return round(m.get(precise, 0) / 1000, 3) if m.get(precise) else m.get(whole, 0)

    return {"held": m.get("held", 0), "held_time_s": seconds("held_time", "held_ms"),
            "immediate": m.get("immediate", 0), "waited": m.get("waited", 0),
            "wait_time_s": seconds("wait_time", "wait_ms"), "overages": m.get("overages", 0),
            "reclaimed": m.get("reclaimed", 0), "reschedules": m.get("reschedules", 0)}


def limiters(request):
    paging = Paging(request)
    query = request.GET.get("q", "").strip()[:MAX_QUERY_CHARS]
    kind = request.GET.get("type") or None
    if kind is not None and kind not in TYPES:
        raise ApiError("invalid_request", f"type must be one of {', '.join(TYPES)}.")
    page = LimiterSet().page(paging.page, paging.count, query=query, type_=kind)
    paging.page = page.number
    return paging.envelope([limiter_item(record) for record in page], page.total,
                           q=query, type=kind, types=list(TYPES),
                           server_time_ms=int(time.time() * 1000))


def one_limiter(request, name: str):
    record = LimiterSet().fetch(name)
    if record is None:
        raise ApiError("not_found", f"No rate limiter {name!r}.")
    return {**limiter_item(record), "metrics": metrics(record), "ttl_s": record.ttl_s,
            "server_time_ms": int(time.time() * 1000)}


def reset(request, name: str):
    if not LimiterSet().reset(name):
        raise ApiError("not_found", f"No rate limiter {name!r}.")
    return {"name": name, **result(1, 1)}


urls = {
    "limiters": endpoint(GET=limiters),
    "limiters/<str:name>": endpoint(GET=one_limiter),
    "limiters/<str:name>/reset": endpoint(POST=reset),
}
