"""Expiring jobs (`expires_in`, Sidekiq Pro's option): a job not started within
`expires_in` seconds of its push is skipped, never run and never retried.

The push stamps `expiry` (epoch seconds) = push time + `expires_in`. The clock starts at
the push, also for a job scheduled for later: `perform_in(2 h)` with `expires_in=1 h`
is expired when it comes due. (Sidekiq Pro's wiki counts from the scheduled time
instead.) A worker that fetches an expired job returns without running it: the job is
acknowledged as a success (a batch counts it as one), counted in the job metrics, and
logged once. A job already running is never interrupted.
"""

import logging
import time
from datetime import UTC, datetime

from . import keys, statsd
from .features import HOOKS, PUSH, ClientHook, JobHook
from .metrics import MINUTE_TTL_S, TEN_MINUTE_TTL_S, metric_class
from .redis import REDIS_ERRORS

logger = logging.getLogger("wurk")

CLIENT_ORDER = 30
# Inside a batch's hook (which must order below 60) and the unique lock's (60), so an
# expired job is a success to both; outside decryption (80), so nothing is decrypted
# for a job that will not run.
JOB_ORDER = 70
# The job metrics' per-class field for expired skips, beside Sidekiq's p, f and ms.
EXPIRED_FIELD = "x"


def _stamp(job: dict, client, origin: str) -> dict:
    seconds = job.get("expires_in")
    # Only a new push starts the clock: a promoted retry or a revived job keeps its own.
    if origin == PUSH and seconds:
        job["expiry"] = time.time() + float(seconds)
    return job


def expired(job: dict, now: float | None = None) -> bool:
    try:
        expiry = float(job["expiry"])
    except (TypeError, ValueError):
        return False  # an unreadable stamp never skips a job
    return (time.time() if now is None else now) > expiry


def _around(run, proceed):
    if not expired(run.job):
        return proceed()
    job = run.job
    logger.info("expired %s jid=%s skipped: it had to start by %s", job.get("class"),
                job.get("jid"), _when(job["expiry"]))
    _count(run.connection, metric_class(job))
    statsd.increment(run.config, "jobs.expired", [f"class:{metric_class(job)}"])
    return None  # a success: acknowledged, not retried, done for its batch


def _when(expiry) -> str:
    return datetime.fromtimestamp(float(expiry), UTC).isoformat(timespec="seconds")


def _count(connection, klass: str) -> None:
    """One more expired job of `klass` in this minute's job metrics (a metrics outage
    must not fail the skip)."""
    now = datetime.now(UTC)
    try:
        pipe = connection.pipeline()
        for key, ttl in ((keys.metrics_minute(now), MINUTE_TTL_S),
                         (keys.metrics_ten_minutes(now), TEN_MINUTE_TTL_S)):
            pipe.hincrby(key, f"{klass}|{EXPIRED_FIELD}", 1)
            pipe.expire(key, ttl)
        pipe.execute()
    except REDIS_ERRORS as exc:
        logger.warning("could not count an expired %s job in the metrics: %s", klass, exc)


HOOKS.add(ClientHook("expires_in", CLIENT_ORDER, _stamp))
HOOKS.add(JobHook("expiry", JOB_ORDER, _around))
