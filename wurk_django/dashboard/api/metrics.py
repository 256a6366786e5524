"""`metrics` (top classes over a period) and `metrics/<class>` (one class per minute)."""

from datetime import timedelta

from ...core.api import MetricsQuery
from ...core.api.metrics import MAX_MINUTES, PERIODS, minutes_for
from ..auth import ApiError, endpoint
from .overview import marks_between

TOP_SERIES = 5  # classes drawn in the chart; the table lists every class
DEFAULT_PERIOD = "1h"


def _period(request, max_minutes: int | None = None) -> tuple[str, int]:
    period = request.GET.get("period", DEFAULT_PERIOD)
    try:
        minutes = minutes_for(period)
    except ValueError as exc:
        raise ApiError("invalid_request", str(exc)) from None
    if max_minutes is not None and minutes > max_minutes:
        allowed = [name for name, value in PERIODS.items() if value <= max_minutes]
        raise ApiError("invalid_request", f"period must be one of {', '.join(allowed)} here.")
    return period, minutes


def _totals(totals) -> dict:
    return {"class": totals.klass, "processed": totals.processed, "failed": totals.failed,
            "total_ms": totals.ms, "avg_ms": round(totals.avg_ms, 2)}


def _window(buckets, bucket_s: int) -> dict:
    starts, ends = buckets[0], buckets[-1] + timedelta(seconds=bucket_s)
    return {"bucket_s": bucket_s, "starts_at_ms": int(starts.timestamp() * 1000),
            "ends_at_ms": int(ends.timestamp() * 1000),
            "buckets": [int(at.timestamp() * 1000) for at in buckets],
            "marks": marks_between(starts, ends)}


def overview(request):
    """Every class in the period by total run time; series for the top few."""
    period, minutes = _period(request)
    needle = request.GET.get("q", "").strip() or None
    top = MetricsQuery().top_jobs(minutes, class_filter=needle)
    ranked = top.ranked()
    series = {totals.klass: [list(point) for point in top.series[totals.klass]]
              for totals in ranked[:TOP_SERIES]}
    return {"period": period, **_window(top.buckets, top.bucket_s),
            "items": [_totals(totals) for totals in ranked], "total": len(ranked),
            "series": series, "series_fields": ["processed", "failed", "ms"]}


def for_class(request, klass: str):
    """One class over at most 8 hours: counts per minute and run-time histograms."""
    period, minutes = _period(request, MAX_MINUTES)
    job = MetricsQuery().for_job(klass, minutes)
    return {"period": period, **_window(job.buckets, job.bucket_s),
            "totals": _totals(job.totals), "class": klass,
            "series": [list(point) for point in job.series],
            "series_fields": ["processed", "failed", "ms"],
            "histogram": {"bounds_ms": list(job.bounds_ms), "counts": job.histogram},
            "histograms": job.histograms}


urls = {
    "metrics": endpoint(GET=overview),
    "metrics/<path:klass>": endpoint(GET=for_class),
}
