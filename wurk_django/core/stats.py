"""Process-wide job counters and the work state, flushed by the heartbeat."""

import threading
import time
from datetime import UTC, datetime

from . import keys

STATS_TTL_S = 157_680_000  # five years


class Counters:
    """Locked in-memory processed/failed counts; drained at each flush."""

    def __init__(self):
        self._lock = threading.Lock()
        self.processed = 0
        self.failed = 0

    def record(self, failed: bool) -> None:
        with self._lock:
            self.processed += 1
            if failed:
                self.failed += 1

    def drain(self) -> tuple[int, int]:
        with self._lock:
            counts = (self.processed, self.failed)
            self.processed = self.failed = 0
            return counts

    def restore(self, processed: int, failed: int) -> None:
        """Add back counts whose flush failed, so a Redis blip loses no statistics."""
        with self._lock:
            self.processed += processed
            self.failed += failed


def flush_counters(connection, counters: Counters) -> None:
    processed, failed = counters.drain()
    if not processed and not failed:
        return
    day = datetime.now(UTC).strftime("%Y-%m-%d")
    try:
        pipe = connection.pipeline()
        for kind, count in (("processed", processed), ("failed", failed)):
            pipe.incrby(keys.stat(kind), count)
            pipe.incrby(keys.stat(kind, day), count)
            pipe.expire(keys.stat(kind, day), STATS_TTL_S)
        pipe.execute()
    except Exception:
        counters.restore(processed, failed)
        raise


class WorkState:
    """The jobs running right now, by thread id, for the `<identity>:work` hash."""

    def __init__(self):
        self._lock = threading.Lock()
        # The payload stays bytes; the heartbeat decodes the few it writes.
        self._work: dict[str, tuple[str, bytes, int]] = {}

    def start(self, tid: str, queue: str, payload: bytes) -> None:
        with self._lock:
            self._work[tid] = (queue, payload, int(time.time()))

    def finish(self, tid: str) -> None:
        with self._lock:
            self._work.pop(tid, None)

    def snapshot(self) -> dict[str, tuple[str, bytes, int]]:
        with self._lock:
            return dict(self._work)

    def __len__(self) -> int:
        return len(self._work)
