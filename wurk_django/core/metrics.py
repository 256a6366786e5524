"""Per-class execution metrics and run-time histograms, flushed each beat."""

import bisect
import threading
from collections import defaultdict
from datetime import UTC, datetime

from . import keys

MINUTE_TTL_S = 28_800
TEN_MINUTE_TTL_S = 259_200
HISTOGRAM_TTL_S = 28_800
# Upper bounds (ms) of the 26 buckets; the last one is open-ended.
HISTOGRAM_BOUNDS_MS = (20, 30, 45, 65, 100, 150, 225, 335, 500, 750, 1100, 1700, 2500,
                       3800, 5750, 8500, 13000, 20000, 30000, 45000, 65000, 100000,
                       150000, 225000, 335000)
HISTOGRAM_BUCKETS = len(HISTOGRAM_BOUNDS_MS) + 1


def bucket_for(elapsed_ms: int) -> int:
    """The first bucket whose upper bound is greater than the run time."""
    return bisect.bisect_right(HISTOGRAM_BOUNDS_MS, elapsed_ms)


def metric_class(job: dict) -> str:
    return str(job.get("wrapped") or job.get("class"))


class Metrics:
    """Accumulates executions, failures, ms and histograms per class between flushes."""

    def __init__(self):
        self._lock = threading.Lock()
        self._reset()

    def _reset(self):
        self._counts: dict[str, int] = defaultdict(int)
        self._histograms: dict[str, list[int]] = {}

    def track(self, klass: str, elapsed_ms: int, failed: bool) -> None:
        with self._lock:
            counts = self._counts
            counts[klass + "|p"] += 1
            if failed:
                counts[klass + "|f"] += 1
                return
            counts[klass + "|ms"] += elapsed_ms
            histogram = self._histograms.get(klass)
            if histogram is None:
                histogram = self._histograms[klass] = [0] * HISTOGRAM_BUCKETS
            histogram[bucket_for(elapsed_ms)] += 1

    def flush(self, connection, now: datetime | None = None) -> None:
        """Write and forget the counts; on a Redis error they are kept for the next flush."""
        with self._lock:
            counts, histograms = self._counts, self._histograms
            self._reset()
        if not counts:
            return
        now = now or datetime.now(UTC)
        try:
            pipe = connection.pipeline()
            for key, ttl in ((keys.metrics_minute(now), MINUTE_TTL_S),
                             (keys.metrics_ten_minutes(now), TEN_MINUTE_TTL_S)):
                for field, value in counts.items():
                    pipe.hincrby(key, field, value)
                pipe.expire(key, ttl)
            for klass, histogram in histograms.items():
                key = keys.histogram(klass, now)
                command: list[str | int] = ["BITFIELD", key, "OVERFLOW", "SAT"]
                for index, count in enumerate(histogram):
                    if count:
                        command += ["INCRBY", "u16", f"#{index}", count]
                pipe.execute_command(*command)
                pipe.expire(key, HISTOGRAM_TTL_S)
            pipe.execute()
        except Exception:
            self._merge_back(counts, histograms)
            raise

    def _merge_back(self, counts, histograms) -> None:
        with self._lock:
            for field, value in counts.items():
                self._counts[field] += value
            for klass, histogram in histograms.items():
                mine = self._histograms.setdefault(klass, [0] * HISTOGRAM_BUCKETS)
                for index, count in enumerate(histogram):
                    mine[index] += count
