"""Per-class execution metrics read back from Redis: top classes and one class's detail.

The writer is `core/metrics.py`. Minute buckets live 8 hours and
10-minute roll-ups 3 days, so queries are capped at 480 minutes and 72 hours, as
Sidekiq's metrics query caps them.
"""

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from .. import keys
from ..metrics import HISTOGRAM_BOUNDS_MS, HISTOGRAM_BUCKETS
from .base import ApiObject, text

MAX_MINUTES = 480
MAX_HOURS = 72
ROLLUP_MINUTES = 10
# The dashboard's period choices, in minutes (Sidekiq 7's metrics page offers the same).
PERIODS = {"1h": 60, "2h": 120, "4h": 240, "8h": 480, "24h": 1440, "48h": 2880, "72h": 4320}
_HISTOGRAM_GET = [part for index in range(HISTOGRAM_BUCKETS)
                  for part in ("GET", "u16", f"#{index}")]


@dataclass
class ClassTotals:
    """One class's counts over a window; only successful runs book milliseconds."""

    klass: str
    processed: int = 0
    failed: int = 0
    ms: int = 0

    @property
    def succeeded(self) -> int:
        return max(self.processed - self.failed, 0)

    @property
    def avg_ms(self) -> float:
        return self.ms / self.succeeded if self.succeeded else 0.0

    def add(self, processed: int, failed: int, ms: int) -> None:
        self.processed += processed
        self.failed += failed
        self.ms += ms


@dataclass
class TopJobs:
    """Every class seen in a window: totals and per-bucket `(processed, failed, ms)`."""

    starts_at: datetime
    bucket_s: int
    buckets: list[datetime]
    totals: dict[str, ClassTotals] = field(default_factory=dict)
    series: dict[str, list[tuple[int, int, int]]] = field(default_factory=dict)

    def ranked(self) -> list[ClassTotals]:
        """Classes by total run time, then by executions, as Sidekiq's table sorts them."""
        return sorted(self.totals.values(), key=lambda t: (-t.ms, -t.processed, t.klass))


@dataclass
class JobMetrics:
    """One class per minute: counts, the window's histogram and each minute's histogram."""

    klass: str
    starts_at: datetime
    bucket_s: int
    buckets: list[datetime]
    totals: ClassTotals
    series: list[tuple[int, int, int]]
    histogram: list[int]
    histograms: list[list[int]]
    bounds_ms: tuple = HISTOGRAM_BOUNDS_MS


def minutes_for(period: str) -> int:
    """The window of a period name such as `"8h"`; ValueError for an unknown one."""
    try:
        return PERIODS[period]
    except KeyError:
        raise ValueError(f"unknown period {period!r}; expected one of {', '.join(PERIODS)}") \
            from None


def _minute_buckets(now: datetime, minutes: int) -> list[datetime]:
    last = now.replace(second=0, microsecond=0)
    return [last - timedelta(minutes=n) for n in range(minutes - 1, -1, -1)]


def _rollup_buckets(now: datetime, hours: int) -> list[datetime]:
    last = now.replace(minute=now.minute - now.minute % ROLLUP_MINUTES, second=0, microsecond=0)
    count = hours * 60 // ROLLUP_MINUTES
    return [last - timedelta(minutes=ROLLUP_MINUTES * n) for n in range(count - 1, -1, -1)]


def _int(value) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


class MetricsQuery(ApiObject):
    """Reads the `j|…` and `h|…` keys; never writes."""

    def top_jobs(self, minutes: int = 60, *, class_filter: str | None = None,
                 now: datetime | None = None) -> TopJobs:
        """Totals per class over the last `minutes` (minute buckets up to 480, else
        10-minute roll-ups up to 72 hours); `class_filter` is a case-insensitive substring."""
        now = (now or datetime.now(UTC)).astimezone(UTC)
        if not isinstance(minutes, int) or minutes < 1 or minutes > MAX_HOURS * 60:
            raise ValueError(f"minutes must be 1..{MAX_HOURS * 60}, got {minutes!r}")
        if minutes <= MAX_MINUTES:
            buckets, bucket_s = _minute_buckets(now, minutes), 60
            key_for = keys.metrics_minute
        else:
            buckets, bucket_s = _rollup_buckets(now, -(-minutes // 60)), ROLLUP_MINUTES * 60
            key_for = keys.metrics_ten_minutes
        bucket_keys = [key_for(at) for at in buckets]

        def build(pipe):
            for key in bucket_keys:
                pipe.hgetall(key)

        result = TopJobs(buckets[0], bucket_s, buckets)
        needle = class_filter.casefold() if class_filter else None
        for index, fields in enumerate(self._pipelined(build)):
            for klass, kind, value in _parse_fields(fields):
                if needle and needle not in klass.casefold():
                    continue
                totals = result.totals.setdefault(klass, ClassTotals(klass))
                series = result.series.setdefault(klass, [(0, 0, 0)] * len(buckets))
                counts = _TRIPLES[kind](value)
                series[index] = tuple(a + b for a, b in zip(series[index], counts))
                totals.add(*counts)
        return result

    def for_job(self, klass: str, minutes: int = 60, *,
                now: datetime | None = None) -> JobMetrics:
        """One class minute by minute over up to 480 minutes, with run-time histograms."""
        now = (now or datetime.now(UTC)).astimezone(UTC)
        if not isinstance(minutes, int) or not 1 <= minutes <= MAX_MINUTES:
            raise ValueError(f"minutes must be 1..{MAX_MINUTES} for one class, got {minutes!r}")
        buckets = _minute_buckets(now, minutes)
        fields = (f"{klass}|p", f"{klass}|f", f"{klass}|ms")

        def run():
            pipe = self.connection.pipeline()
            for at in buckets:
                pipe.hmget(keys.metrics_minute(at), *fields)
                histogram_key = keys.histogram(klass, at)
                # Sidekiq 7 wrote the same value without the `h|` prefix; a Redis shared
                # with one may hold either, so both are read and summed.
                for key in (histogram_key, histogram_key[2:]):
                    pipe.execute_command("BITFIELD_RO", key, *_HISTOGRAM_GET)
            # A key of another type under a legacy name answers WRONGTYPE: read as zeros.
            return pipe.execute(raise_on_error=False)

        replies = self._read(run)
        totals, series, histograms = ClassTotals(klass), [], []
        window = [0] * HISTOGRAM_BUCKETS
        for index in range(len(buckets)):
            counts, current, legacy = replies[3 * index:3 * index + 3]
            p, f, ms = (0, 0, 0) if isinstance(counts, Exception) else map(_int, counts)
            series.append((p, f, ms))
            totals.add(p, f, ms)
            minute = [_int(a) + _int(b) for a, b in zip(_counters(current), _counters(legacy))]
            histograms.append(minute)
            window = [a + b for a, b in zip(window, minute)]
        return JobMetrics(klass, buckets[0], 60, buckets, totals, series, window, histograms)


_TRIPLES = {"p": lambda n: (n, 0, 0), "f": lambda n: (0, n, 0), "ms": lambda n: (0, 0, n)}


def _counters(reply) -> list[int]:
    if isinstance(reply, Exception) or not reply:
        return [0] * HISTOGRAM_BUCKETS
    return [_int(value) for value in reply]


def _parse_fields(fields: dict):
    """Yield `(class, kind, count)` from a bucket hash; fields are `<class>|p|f|ms`."""
    for name, value in fields.items():
        klass, _, kind = text(name).rpartition("|")
        if klass and kind in ("p", "f", "ms"):
            yield klass, kind, _int(value)
