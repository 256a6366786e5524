"""The history snapshot (Sidekiq Enterprise's `retain_history`): every `retain_history_s`
the leader appends the cluster's numbers to the `history:metrics` stream, and sends
them as statsd gauges when a statsd client is configured."""

import logging

from . import keys, statsd
from .outage import OutageLog
from .snapshot import ClusterSnapshot, read_snapshot
from .timer_loop import TimerLoop

logger = logging.getLogger("wurk")

# About 3.5 days of entries at the 30 s Sidekiq Enterprise suggests; trimmed with `~`
# (whole stream nodes), so a trim costs O(1) per tick.
MAX_ENTRIES = 10_000
# The stream's fields, named as Sidekiq Enterprise writes them, so either side reads both.
FIELDS = ("processed", "failures", "enqueued", "retries", "dead", "scheduled", "busy")


def snapshot_fields(snapshot: ClusterSnapshot) -> dict[str, int]:
    """The stream entry for a snapshot; a number whose key held another type is left out."""
    values: dict[str, int | None] = {"processed": snapshot.processed, "failures": snapshot.failed,
                                     "enqueued": snapshot.enqueued, "retries": snapshot.retries,
                                     "dead": snapshot.dead, "scheduled": snapshot.scheduled,
                                     "busy": snapshot.busy}
    return {name: value for name in FIELDS if (value := values[name]) is not None}


class HistorySnapshot:
    """A leader-gated TimerLoop; followers tick too but read nothing (one cached GET)."""

    def __init__(self, config, connection, is_leader):
        self.config = config
        self.connection = connection
        self.is_leader = is_leader
        self.loop = TimerLoop("wurk-history", config.retain_history_s, self.tick,
                              outage=OutageLog("history snapshot", config))

    def start(self) -> None:
        self.loop.start()

    def stop(self) -> None:
        self.loop.stop()

    def tick(self) -> bool:
        """Take one snapshot if this process leads; True when it wrote one."""
        if not self.is_leader():
            return False
        snapshot = read_snapshot(self.connection)
        fields = snapshot_fields(snapshot)
        connection = self.connection
        connection.write(connection.client.xadd, keys.HISTORY_METRICS, fields,
                         maxlen=MAX_ENTRIES, approximate=True)
        if self.config.statsd is not None:
            self._emit(snapshot, fields)
        return True

    def _emit(self, snapshot: ClusterSnapshot, fields: dict) -> None:
        """The user's collector, given the statsd client, or else the standard gauges."""
        collector = self.config.history_collector
        if collector is None:
            self._gauges(snapshot, fields)
            return
        client = statsd.client_for(self.config)
        if client is None:
            return
        try:
            collector(client)
        except Exception as exc:  # noqa: BLE001 - the next snapshot calls it again
            logger.warning("history_collector %r failed: %s: %s", collector,
                           type(exc).__name__, exc)

    def _gauges(self, snapshot: ClusterSnapshot, fields: dict) -> None:
        """Sidekiq Enterprise's gauges: `sidekiq.<field>`, and per queue its size and latency."""
        config = self.config
        for name, value in fields.items():
            statsd.gauge(config, name, value)
        for queue in snapshot.queues:
            if queue.size is None:
                continue
            tags = [f"queue:{queue.name}"]
            statsd.gauge(config, "queue.size", queue.size, tags)
            statsd.gauge(config, "queue.latency", queue.latency_s, tags)
