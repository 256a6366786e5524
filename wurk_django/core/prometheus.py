"""Prometheus metrics through `prometheus_client` (the `prometheus` extra): the cluster's
gauges and counters read from Redis at scrape time in one round trip, and a worker
process's own job counters, fed by a server middleware installed only when its metrics
port is configured."""

import time

from .errors import ConfigurationError
from .metrics import metric_class
from .snapshot import ClusterSnapshot, read_snapshot

INSTALL_HINT = "pip install 'wurk-django[prometheus]'"
# Seconds; jobs run from milliseconds to many minutes.
DURATION_BUCKETS_S = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120,
                      300, 600, 1800, 3600)


def require(field: str):
    """The prometheus_client module, or a ConfigurationError naming the setting that needs it."""
    try:
        import prometheus_client
    except ImportError:
        raise ConfigurationError(f"{field} needs the prometheus_client package: "
                                 f"{INSTALL_HINT}", field=field) from None
    return prometheus_client


# --- the cluster, read at scrape time -------------------------------------------------

class ClusterCollector:
    """A collector that takes one snapshot per scrape (one Lua call, O(queues))."""

    def __init__(self, connection):
        self.connection = connection

    def describe(self):
        return []  # registering must not scrape Redis

    def collect(self):
        return cluster_families(read_snapshot(self.connection))


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


def cluster_exposition(connection, accept: str = "") -> tuple[bytes, str]:
    """The cluster's metrics in the format the scraper asked for, with its content type.

    Raises a Wurk RedisFailure when Redis cannot be read: the scrape fails (`up` is 0)
    rather than reporting zeros.
    """
    prometheus_client = require("the Prometheus endpoint")
    registry = prometheus_client.CollectorRegistry(auto_describe=False)
    registry.register(ClusterCollector(connection))
    encoder, content_type = prometheus_client.exposition.choose_encoder(accept)
    return encoder(registry), content_type


# --- one worker process ------------------------------------------------------------------

class ProcessMetrics:
    """This process's job counters and run-time histogram, in a registry of their own."""

    def __init__(self):
        prometheus_client = require("metrics_port")
        self.registry = registry = prometheus_client.CollectorRegistry()
        labels = ["class", "queue"]
        self.processed = prometheus_client.Counter(
            "wurk_jobs_processed", "Jobs this process ran.", labels, registry=registry)
        self.failed = prometheus_client.Counter(
            "wurk_jobs_failed", "Jobs this process ran that raised.", labels, registry=registry)
        self.duration = prometheus_client.Histogram(
            "wurk_job_duration_seconds", "Run time of this process's jobs.", labels,
            buckets=DURATION_BUCKETS_S, registry=registry)
        self.busy = prometheus_client.Gauge(
            "wurk_process_busy_threads", "Threads of this process running a job.",
            registry=registry)
        self.threads = prometheus_client.Gauge(
            "wurk_process_threads", "Threads of this process (its concurrency).",
            registry=registry)

    def watch(self, busy, concurrency: int) -> None:
        """Read `busy()` at each scrape; the launcher calls this once it has its work state."""
        self.busy.set_function(busy)
        self.threads.set(concurrency)


_process_metrics: ProcessMetrics | None = None


def process_metrics() -> ProcessMetrics:
    """The process's one set of counters (a supervisor's children inherit empty ones:
    the supervisor itself never runs a job)."""
    global _process_metrics
    if _process_metrics is None:
        _process_metrics = ProcessMetrics()
    return _process_metrics


class PrometheusJobMetrics:
    """Server middleware: counts every job this process runs, by class and queue.

    A job interrupted by shutdown counts as failed, as it does in `stat:failed`.
    """

    def __init__(self, metrics: ProcessMetrics):
        self.metrics = metrics

    def call(self, instance, job, queue, next_):
        started = time.monotonic()
        failed = True
        try:
            result = next_()
            failed = False
            return result
        finally:
            metrics, labels = self.metrics, (metric_class(job), queue)
            metrics.processed.labels(*labels).inc()
            if failed:
                metrics.failed.labels(*labels).inc()
            metrics.duration.labels(*labels).observe(time.monotonic() - started)


def install(config) -> None:
    """Count every job of a worker whose metrics port is set (Config calls this)."""
    config.server_middleware.add(PrometheusJobMetrics, process_metrics())
