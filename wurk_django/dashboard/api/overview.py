"""`meta`, `health`, `stats` and `stats/history`: who is asking, and the cluster's numbers."""

import time
from datetime import UTC, datetime
from datetime import time as clock

from django.middleware.csrf import get_token
from django.urls import reverse

from ... import conf
from ...core import deploy
from ...core.api import History, RedisServer, Stats
from ...core.api.base import WrongTypeError
from ...core.version import VERSION
from ..auth import ApiError, can_change, endpoint
from ..views_shell import csrf_header
from .sets import SET_ACTIONS

HISTORY_DAYS = (1, 180)  # Sidekiq rejects `days` outside 1..180
DEFAULT_HISTORY_DAYS = 30
# What this version can show. Profiles have pages and routes, but nothing writes their
# data yet: they stay off (the SPA hides them, their endpoints answer 501) until their
# engine lands, when one switch here turns it on.
FEATURES = {"metrics": True, "periodic": True, "queue_pause": True,
            "batches": True, "limiters": True, "profiles": False}


def now_ms() -> int:
    return int(time.time() * 1000)


def meta(request):
    """The per-user half of the shell's config; also sets the CSRF cookie."""
    settings = conf.dashboard_settings()
    user = request.user
    return {
        "version": VERSION,
        "read_only": settings.read_only,
        "can_change": can_change(user),
        "user": {"username": user.get_username(),
                 "name": user.get_full_name() if hasattr(user, "get_full_name") else ""},
        "csrf_header": csrf_header(settings.csrf_header_name),
        "csrf_cookie": settings.csrf_cookie_name,
        # get_token also marks the cookie for sending, as ensure_csrf_cookie does.
        "csrf_token": get_token(request),
        "poll_default": settings.poll_interval_s,
        "poll_choices": list(conf.POLL_CHOICES_S),
        "features": dict(FEATURES),
        "sets": {name: {"row_actions": sorted(spec["row"]), "all_actions": sorted(spec["all"])}
                 for name, spec in SET_ACTIONS.items()},
        "admin_url": reverse("admin:index"),
        "logout_url": reverse("admin:logout"),
        "server_time_ms": now_ms(),
    }


def health(request):
    """200 when Redis answers one LLEN; a RedisUnavailableError becomes 503 upstream."""
    try:
        round_trip_s = RedisServer().probe()
    except WrongTypeError as exc:
        # Redis answered, so it is up; what `queue:default` holds is another matter.
        return {"status": "ok", "redis_ms": None, "problems": [str(exc)]}
    return {"status": "ok", "redis_ms": round(round_trip_s * 1000, 3), "problems": []}


def stats(request):
    snapshot = Stats()
    return {
        "processed": snapshot.processed, "failed": snapshot.failed,
        "busy": snapshot.workers_size, "processes": snapshot.processes_size,
        "enqueued": snapshot.enqueued, "retries": snapshot.retry_size,
        "scheduled": snapshot.scheduled_size, "dead": snapshot.dead_size,
        "default_latency": _rounded(snapshot.default_queue_latency),
        "redis": RedisServer().info(),
        "server_time_ms": now_ms(),
        # Keys of the wrong type: their numbers above are null, the rest still count.
        "problems": snapshot.problems,
    }


def _rounded(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds, 3)


def history(request):
    """Daily processed/failed for the last `days` UTC days, and the deploy marks in them."""
    raw = request.GET.get("days", str(DEFAULT_HISTORY_DAYS))
    low, high = HISTORY_DAYS
    if not raw.isdigit() or not low <= int(raw) <= high:
        raise ApiError("invalid_request", f"days must be a whole number from {low} to {high}.")
    series = History(int(raw))
    dates = list(reversed(series.dates))  # oldest first, the order a chart draws
    processed, failed = series.processed, series.failed
    return {
        "days": int(raw),
        "processed": {day: processed[day] for day in dates},
        "failed": {day: failed[day] for day in dates},
        "marks": marks_between(datetime.fromisoformat(dates[0]), datetime.fromisoformat(dates[-1])),
    }


def marks_between(start: datetime, end: datetime) -> list[dict]:
    """Deploy marks of every UTC day from `start` to `end`, oldest first."""
    start = datetime.combine(start.date(), clock.min, UTC)
    end = datetime.combine(end.date(), clock.min, UTC)
    found = deploy.fetch_days(deploy.days_between(start, end))
    return [mark_item(at, label) for at, label in found.items()]


def mark_item(at: str, label: str) -> dict:
    try:
        at_ms = int(datetime.fromisoformat(at.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        at_ms = None
    return {"at": at, "at_ms": at_ms, "label": label}


urls = {
    "meta": endpoint(GET=meta),
    "health": endpoint(GET=health),
    "stats": endpoint(GET=stats),
    "stats/history": endpoint(GET=history),
}
