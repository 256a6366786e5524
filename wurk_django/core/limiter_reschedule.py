"""What a worker does with a job a rate limiter refused (OverLimit, or an error named in
`Limiter.configure(errors=...)`): the same job, same jid, goes back to `schedule` with a
backoff, never holding a thread and never counting as a failure; after too many
reschedules it goes to the dead set instead.

It is an error hook (core/features.py): looked at only when a job raises, so jobs that
never meet a limiter pay nothing for it.
"""

import logging
import math
import random
import time

from . import keys, statsd
from .errors import OverLimit
from .features import HOOKS, ErrorHook, JobRun
from .limiter_algorithms import SCRIPTS, SETTINGS
from .metrics import metric_class
from .payload import dumps, error_class, error_message, loads
from .redis import REDIS_ERRORS
from .retry import RetryHandled, run_death_handlers

logger = logging.getLogger("wurk")

DEFAULT_CAP = 20
DEAD_REASON = "rate_limited"


def default_backoff(overrated: int) -> int:
    """Sidekiq Enterprise's: about five minutes more for each reschedule, with jitter."""
    return 300 * overrated + random.randint(0, 299) + 1


def backoff_s(limiter, job: dict, exc: BaseException, config) -> float:
    """The limiter's backoff, else the configured one, else the default."""
    options = getattr(limiter, "options", None) or {}
    for backoff in (options.get("backoff"), SETTINGS.backoff):
        if backoff is None:
            continue
        try:
            seconds = backoff(limiter, job, exc)
        except Exception as hook_exc:  # noqa: BLE001 - the user's hook: report, use the default
            config.handle_exception(hook_exc, {"context": "limiter backoff failed; using the "
                                                          "default", "job": job})
            break
        if isinstance(seconds, (int, float)) and not isinstance(seconds, bool) \
                and math.isfinite(seconds) and seconds >= 0:
            return float(seconds)
        logger.warning("Limiter backoff returned %r, not seconds; using the default", seconds)
        break
    return float(default_backoff(job["overrated"]))


def _overrated(job: dict) -> int:
    count = job.get("overrated", 0)
    return count if isinstance(count, int) and not isinstance(count, bool) and count > 0 else 0


def settle(run: JobRun, exc: BaseException) -> bool:
    """Reschedule the job, or past the cap move it to `dead`; False lets a limiter with
    `reschedule=0` send the error down the normal retry path."""
    if run.unit is None:
        return False  # run inline, in the caller's process: the caller sees the error
    limiter = getattr(exc, "limiter", None)
    job = loads(run.raw)
    job["overrated"] = _overrated(job) + 1
    if isinstance(exc, OverLimit):
        exc.job = job
    cap = (getattr(limiter, "options", None) or {}).get("reschedule", DEFAULT_CAP)
    if cap == 0:
        return False
    if job["overrated"] >= cap:
        if _brake(run, job, exc):
            raise RetryHandled() from exc  # a death: booked as the failure it is
        return True  # another copy of it exists: this run settles nothing
    at = time.time() + backoff_s(limiter, job, exc, run.config)
    job.pop("enqueued_at", None)  # as any scheduled push: it is not enqueued yet
    if _move(run, keys.SCHEDULE, dumps(job), at) and limiter is not None:
        _count_reschedule(limiter)
    return True


def _brake(run: JobRun, job: dict, exc: BaseException) -> bool:
    """Still refused after `cap` reschedules: the limiter is saturated, so the job goes
    to the dead set (not into retries, which would add 25 more rounds), its death hooks
    and handlers run, and it is acked. Its count starts again from zero, so a retry from
    the dead set gets a full round of reschedules. False when it was not ours to move."""
    count = job.pop("overrated")
    job["error_class"] = error_class(exc)
    job["error_message"] = f"{DEAD_REASON}: {error_message(exc)} (overrated={count})"
    job["failed_at"] = run.config.job_clock()
    job.pop("enqueued_at", None)
    now = time.time()
    config = run.config
    if _move(run, keys.DEAD, dumps(job), now,
             trim=(now - config.dead_timeout_in_seconds, config.dead_max_jobs)):
        statsd.increment(config, "jobs.rate_limited", [f"worker:{metric_class(job)}"])
        run_death_handlers(config, job, exc)
        return True
    return False


def _move(run: JobRun, target: str, member: bytes, score: float, trim=None) -> bool:
    """Out of the private list and into `target` in one script; False when the private
    list had lost the job (another copy of it runs or waits: nothing is written)."""
    private = getattr(run.unit, "private_queue", None)
    age_cut, cap = trim if trim is not None else ("", "")
    command = SCRIPTS.command("limiter_reschedule", (private or target, target),
                              (run.raw, member, repr(score), "1" if private else "0",
                               repr(age_cut) if trim else "", cap))
    connection = run.connection
    return SCRIPTS.run(connection, [command])[0] == 1


def _count_reschedule(limiter) -> None:
    stats = keys.limiter_stats(limiter.name)
    try:
        connection = SETTINGS.connection()
        connection.write(connection.execute_batch, [
            ("HINCRBY", stats, "reschedules", 1), ("EXPIRE", stats, limiter.options["ttl"])])
    except REDIS_ERRORS as exc:  # a counter for the dashboard: never fail the settled job
        logger.warning("Could not count a reschedule of limiter %r: %s", limiter.name, exc)


_hook: ErrorHook | None = None


def claim_errors(extra: tuple) -> None:
    """Claim OverLimit and `extra` (Limiter.configure(errors=...)) in every job."""
    global _hook
    hook = ErrorHook((OverLimit, *extra), settle)
    if _hook is not None:
        HOOKS.remove(_hook)
    HOOKS.add(hook)
    _hook = hook


claim_errors(())
