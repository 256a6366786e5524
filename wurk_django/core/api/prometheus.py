"""The cluster's metrics for Prometheus, read at scrape time: one snapshot (one Lua call,
O(queues + processes)) and, only when rate limiters exist, their use in four more round
trips. Served by the Django endpoint (wurk_django/metrics_view.py)."""

from ..prometheus import require
from ..snapshot import ClusterSnapshot, read_snapshot
from .limiters import LimiterSet


class ClusterCollector:
    """A collector that takes one snapshot per scrape (one Lua call, O(queues)), and reads
    the rate limiters' use only when the snapshot counted some."""

    def __init__(self, connection, config=None):
        self.connection = connection
        self.config = config

    def describe(self):
        return []  # registering must not scrape Redis

    def collect(self):
        snapshot = read_snapshot(self.connection)
        families = cluster_families(snapshot)
        if snapshot.limiters and self.config is not None:
            families += limiter_families(self.config, snapshot.limiters)
        return families


def cluster_families(snapshot: ClusterSnapshot) -> list:
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

    def gauge(name: str, documentation: str, value, labels=None):
        family = GaugeMetricFamily(name, documentation, labels=labels)
        if value is not None:
            family.add_metric([], value)
        return family

    size = GaugeMetricFamily("wurk_queue_size", "Jobs waiting in the queue.", labels=["queue"])
    latency = GaugeMetricFamily("wurk_queue_latency_seconds", "Seconds the oldest job of the "
                                "queue has waited since it was enqueued.", labels=["queue"])
    paused = GaugeMetricFamily("wurk_queue_paused", "1 while the queue is paused.",
                               labels=["queue"])
    for queue in snapshot.queues:
        if queue.size is not None:
            size.add_metric([queue.name], queue.size)
            latency.add_metric([queue.name], queue.latency_s)
        paused.add_metric([queue.name], 1 if queue.paused else 0)
    processed = CounterMetricFamily("wurk_processed", "Jobs run by every process, ever "
                                    "(Sidekiq's stat:processed).")
    failed = CounterMetricFamily("wurk_failed", "Jobs that raised, ever (stat:failed).")
    for family, value in ((processed, snapshot.processed), (failed, snapshot.failed)):
        if value is not None:
            family.add_metric([], value)
    return [size, latency, paused, processed, failed,
            gauge("wurk_scheduled_jobs", "Jobs in the schedule set.", snapshot.scheduled),
            gauge("wurk_retry_jobs", "Jobs waiting for a retry.", snapshot.retries),
            gauge("wurk_dead_jobs", "Jobs in the dead set.", snapshot.dead),
            gauge("wurk_enqueued_jobs", "Jobs waiting in every queue.", snapshot.enqueued),
            gauge("wurk_processes", "Live worker processes (Wurk and Sidekiq).",
                  len(snapshot.processes)),
            gauge("wurk_busy_threads", "Threads running a job, over every process.",
                  snapshot.busy),
            gauge("wurk_threads", "Threads of every live process (their concurrency).",
                  snapshot.concurrency)]


# The limiters' counters exported, of those Sidekiq Enterprise's limiters keep.
LIMITER_COUNTERS = {"held": "Times a slot or a unit was granted.",
                    "immediate": "Grants without waiting.",
                    "waited": "Grants after waiting.",
                    "overages": "Times a caller found the limit reached.",
                    "reclaimed": "Slots taken back from holders that ran past their lease.",
                    "reschedules": "Jobs rescheduled because the limit was reached."}


def limiter_families(config, count: int) -> list:
    """Each rate limiter's use, limit and counters, labelled by name and type: four more
    round trips (names, meta, Redis's clock, state) and O(limiters), only with limiters."""
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

    records = LimiterSet(config).page(1, page_size=count).entries
    labels = ["limiter", "type"]
    gauges = {field: GaugeMetricFamily(f"wurk_limiter_{field}", text, labels=labels)
              for field, text in (("used", "Slots or units in use now."),
                                  ("limit", "The limiter's size or rate."),
                                  ("available", "What may still be taken now."))}
    counters = {field: CounterMetricFamily(f"wurk_limiter_{field}", text, labels=labels)
                for field, text in LIMITER_COUNTERS.items()}
    for record in records:
        values = [record.name, record.type]
        for field, family in gauges.items():
            if getattr(record, field) is not None:
                family.add_metric(values, getattr(record, field))
        for field, counter in counters.items():
            if isinstance(record.metrics.get(field), (int, float)):
                counter.add_metric(values, record.metrics[field])
    return [*gauges.values(), *counters.values()]


def cluster_exposition(connection, accept: str = "", config=None) -> tuple[bytes, str]:
    """The cluster's metrics in the format the scraper asked for, with its content type;
    with `config`, the rate limiters' use too.

    Raises a Wurk RedisFailure when Redis cannot be read: the scrape fails (`up` is 0)
    rather than reporting zeros.
    """
    prometheus_client = require("the Prometheus endpoint")
    registry = prometheus_client.CollectorRegistry(auto_describe=False)
    registry.register(ClusterCollector(connection, config))
    encoder, content_type = prometheus_client.exposition.choose_encoder(accept)
    return encoder(registry), content_type
