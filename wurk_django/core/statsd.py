"""StatsD / DogStatsD metrics under Sidekiq Pro's names (`sidekiq.jobs.count`, ...), so the
dashboards made for Sidekiq read Wurk's numbers too.

The client comes from a zero-argument factory (`WURK["STATSD"]`), called once per process
on first use, after any fork, so no socket is shared between a supervisor's children.
Any client with DogStatsd's methods works (the `statsd` extra installs `datadog`); the
`statsd` package's StatsClient works too, without tags. Emitting never raises: a failing
client is reported a few times a minute and the job goes on.
"""

import logging
import os
import threading
import time

from .errors import Shutdown
from .metrics import metric_class
from .outage import NoticeThrottle
from .payload import loads

logger = logging.getLogger("wurk")

PREFIX = "sidekiq."  # Sidekiq Pro hard-codes it, and so do the dashboards built on it
FACTORY_RETRY_S = 60.0

_clients: dict[int, tuple[int, object]] = {}  # id(factory) -> (pid, client)
_failed_at: dict[int, float] = {}
_lock = threading.Lock()
_notices = NoticeThrottle()


class _PlainStatsd:
    """The `statsd` package's StatsClient behind DogStatsd's method names (it has no tags)."""

    def __init__(self, client):
        self.client = client

    def increment(self, metric, value=1, tags=None, sample_rate=None):
        self.client.incr(metric, value, rate=1 if sample_rate is None else sample_rate)

    def gauge(self, metric, value, tags=None, sample_rate=None):
        self.client.gauge(metric, value, rate=1 if sample_rate is None else sample_rate)

    def distribution(self, metric, value, tags=None, sample_rate=None):
        self.client.timing(metric, value, rate=1 if sample_rate is None else sample_rate)


def client_for(config):
    """This process's client for the config's factory, or None (unset, or the factory
    failed less than a minute ago)."""
    factory = config.statsd
    if factory is None:
        return None
    key, pid = id(factory), os.getpid()
    cached = _clients.get(key)
    if cached is not None and cached[0] == pid:
        return cached[1]
    with _lock:
        cached = _clients.get(key)
        if cached is not None and cached[0] == pid:
            return cached[1]
        if time.monotonic() - _failed_at.get(key, float("-inf")) < FACTORY_RETRY_S:
            return None
        try:
            client = _adapted(factory())
        except Exception as exc:  # noqa: BLE001 - a metric must never fail a job
            _failed_at[key] = time.monotonic()
            _notices.warn("The statsd factory %r failed (%s: %s); no statsd metrics for "
                          "%.0f s", factory, type(exc).__name__, exc, FACTORY_RETRY_S)
            return None
        _clients[key] = (pid, client)
        return client


def reset() -> None:
    """Forget every client made so far; the next emit calls its factory again."""
    with _lock:
        _clients.clear()
        _failed_at.clear()


def _adapted(client):
    if not hasattr(client, "increment") and hasattr(client, "incr"):
        return _PlainStatsd(client)
    for name in ("increment", "gauge"):
        if not callable(getattr(client, name, None)):
            raise TypeError(f"the statsd client {client!r} has no {name}() method")
    return client


def _emit(method: str, client, metric: str, value, tags, sample_rate) -> None:
    try:
        # A client without distributions (DogStatsd before them) gets a histogram.
        fallback = "histogram" if method == "distribution" else method
        send = getattr(client, method, None) or getattr(client, fallback)
        send(PREFIX + metric, value, tags=tags, sample_rate=sample_rate)
    except Exception as exc:  # noqa: BLE001 - a metric must never fail a job
        _notices.warn("statsd %s %s failed: %s: %s", method, PREFIX + metric,
                      type(exc).__name__, exc)


def increment(config, metric: str, tags: list | None = None, value: int = 1) -> None:
    """Count `sidekiq.<metric>`; does nothing without a statsd factory."""
    if config.statsd is None:
        return
    client = client_for(config)
    if client is not None:
        _emit("increment", client, metric, value, tags, None)


def gauge(config, metric: str, value, tags: list | None = None) -> None:
    if config.statsd is None:
        return
    client = client_for(config)
    if client is not None:
        _emit("gauge", client, metric, value, tags, None)


def distribution(config, metric: str, value, tags: list | None = None) -> None:
    if config.statsd is None:
        return
    client = client_for(config)
    if client is not None:
        _emit("distribution", client, metric, value, tags, None)


def job_tags(job, queue) -> list[str]:
    """`class:` and `queue:` tags for the named job counters (a payload may be bytes)."""
    if isinstance(job, (bytes, str)):
        try:
            job = loads(job)
        except ValueError:
            job = {}
    klass = metric_class(job) if isinstance(job, dict) else "None"
    return [f"class:{klass}", f"queue:{queue}"]


class StatsdJobMetrics:
    """Server middleware (opt-in: `WURK["STATSD_JOB_METRICS"]`): Sidekiq Pro's job metrics.

    `jobs.count` before the run; `jobs.success` or `jobs.failure` after it (a job
    interrupted by shutdown counts as a success, as in Sidekiq Pro), `jobs.perform` (a
    gauge) and `jobs.perform_dist` (a distribution) with its run time in ms. Tags:
    `worker:<class>`, `queue:<queue>` and those of the `statsd_options` hook; the job's
    `dd_rate` field overrides the sample rate.
    """

    config = None  # set by the middleware chain

    def call(self, instance, job, queue, next_):
        config = self.config
        client = client_for(config)
        if client is None:
            return next_()
        klass = metric_class(job)
        tags, rate = self._tags_and_rate(config, klass, job, queue)
        _emit("increment", client, "jobs.count", 1, tags, rate)
        started = time.monotonic()
        outcome = "jobs.failure"
        try:
            result = next_()
            outcome = "jobs.success"
            return result
        except Shutdown:
            outcome = "jobs.success"
            raise
        finally:
            elapsed_ms = (time.monotonic() - started) * 1000
            _emit("increment", client, outcome, 1, tags, rate)
            _emit("gauge", client, "jobs.perform", elapsed_ms, tags, rate)
            _emit("distribution", client, "jobs.perform_dist", elapsed_ms, tags, rate)

    @staticmethod
    def _tags_and_rate(config, klass: str, job: dict, queue: str) -> tuple[list, float | None]:
        tags = [f"worker:{klass}", f"queue:{queue}"]
        rate = None
        hook = config.statsd_options
        if hook is not None:
            try:
                extra = hook(klass, job, queue) or {}
                tags += list(extra.get("tags") or ())
                rate = extra.get("sample_rate")
            except Exception as exc:  # noqa: BLE001 - a metric must never fail a job
                _notices.warn("statsd_options hook %r failed: %s: %s", hook,
                              type(exc).__name__, exc)
        dd_rate = job.get("dd_rate")
        if isinstance(dd_rate, (int, float)) and not isinstance(dd_rate, bool):
            rate = dd_rate
        return tags, rate


def install(config) -> None:
    """Send job metrics for every job (Config calls this when both settings ask for it)."""
    config.server_middleware.add(StatsdJobMetrics)
