"""Prometheus metrics through `prometheus_client` (the `prometheus` extra) for one worker
process: its own job counters, fed by a server middleware installed only when its
metrics port is configured. The cluster's metrics are the data API's (api/prometheus.py)."""

import time

from .errors import ConfigurationError
from .metrics import metric_class

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
