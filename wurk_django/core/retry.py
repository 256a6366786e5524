"""Failure handling: retries with Sidekiq's backoff, hooks, exhaustion and the dead set."""

import random
import time

from . import keys
from .errors import Shutdown
from .features import HOOKS, JobHandled, run_death_hooks
from .payload import (
    backtrace_lines,
    dumps,
    encode_backtrace,
    error_class,
    error_message,
    loads,
    to_epoch_seconds,
)
from .registry import REGISTRY


class RetryHandled(Exception):
    """The failure was booked (retry, discard or death); the fetched job may be acked."""


def retry_enabled(value) -> bool:
    """Ruby truthiness: only nil and false disable retries; `retry: 0` means "dead at once"."""
    return value is not None and value is not False


def base_delay(count: int) -> int:
    return count ** 4 + 15


def jitter(count: int) -> int:
    return random.randrange(10 * (count + 1))


def caused_by_shutdown(exc: BaseException | None) -> bool:
    """True if `exc` or anything in its cause/context chain is a Shutdown."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, Shutdown):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


def send_to_dead(connection, config, member: bytes) -> None:
    """Add a member to `dead` and trim by age and size, in one MULTI, as Sidekiq's
    DeadSet#kill does."""
    now = time.time()

    def send():
        pipe = connection.pipeline(transaction=True)
        pipe.zadd(keys.DEAD, {member: now})
        pipe.zremrangebyscore(keys.DEAD, "-inf", now - config.dead_timeout_in_seconds)
        # Keeps dead_max_jobs - 1 members once full: Sidekiq's exact command, on purpose.
        pipe.zremrangebyrank(keys.DEAD, 0, -config.dead_max_jobs)
        pipe.execute()

    connection.write(send)


def run_death_handlers(config, job: dict, exc: BaseException) -> None:
    """The features' death hooks (a batch books the death), then the user's handlers."""
    if HOOKS.death:
        run_death_hooks(job, exc, config)
    for handler in config.death_handlers:
        try:
            handler(job, exc)
        except Exception as handler_exc:  # noqa: BLE001 - one handler must not stop the rest
            config.handle_exception(handler_exc, {"context": "Error calling death handler",
                                                  "job": job})


def _find_task(name):
    """The task for a name, or None; the failure being booked must not be masked by
    a second one (a module that cannot be imported raised the first time too)."""
    if not isinstance(name, str):
        return None
    try:
        return REGISTRY.find(name)
    except Exception:  # noqa: BLE001 - must not mask the failure being booked
        return None


class JobRetry:
    """The two retry guards around a job and the bookkeeping behind them."""

    def __init__(self, config, connection):
        self.config = config
        self.connection = connection

    def global_guard(self, raw: bytes, queue: str, run):
        """Outer guard: catches what the local guard could not (no task instance)."""
        try:
            return run()
        except (RetryHandled, Shutdown, JobHandled):
            raise
        except BaseException as exc:
            if caused_by_shutdown(exc):
                raise Shutdown() from exc
            job = loads(raw)
            task = _find_task(job.get("class"))
            if job.get("retry") is None:
                # A payload without `retry` (pushed by hand, or by a client that leaves
                # defaults out) follows its task's option, or the configured default
                # when this process does not know the class: it is never dropped.
                job["retry"] = self._task_retry(task)
            if retry_enabled(job["retry"]):
                self.process_retry(task, job, queue, exc)
            else:
                run_death_handlers(self.config, job, exc)
            raise RetryHandled() from exc

    def local_guard(self, task: type, raw: bytes, queue: str, run):
        """Inner guard: has the task class, so its retry option and hooks apply."""
        try:
            return run()
        except (RetryHandled, Shutdown, JobHandled):
            raise
        except BaseException as exc:
            if caused_by_shutdown(exc):
                raise Shutdown() from exc
            job = loads(raw)
            if job.get("retry") is None:
                job["retry"] = self._task_retry(task)
            if not retry_enabled(job["retry"]):
                raise
            self.process_retry(task, job, queue, exc)
            raise RetryHandled() from exc

    def _task_retry(self, task):
        default = self.config.default_job_options["retry"]
        return default if task is None else task.task_options.get("retry", default)

    def process_retry(self, task, job: dict, queue: str, exc: BaseException) -> None:
        retry = job.get("retry")
        max_attempts = retry if type(retry) is int else self.config.max_retries
        job["queue"] = job.get("retry_queue") or queue
        job["error_message"] = error_message(exc)
        job["error_class"] = error_class(exc)
        if "retry_count" in job:
            # Sidekiq's order (stamp, then count), so a booked retry matches its bytes.
            job["retried_at"] = self.config.job_clock()
            job["retry_count"] = int(job["retry_count"]) + 1
        else:
            job["failed_at"] = self.config.job_clock()
            job["retry_count"] = 0
        backtrace = job.get("backtrace")
        if backtrace:
            lines = self.config.backtrace_cleaner(backtrace_lines(exc))
            if type(backtrace) is int:
                lines = lines[:backtrace]
            job["error_backtrace"] = encode_backtrace(lines)

        count = job["retry_count"]
        if count >= max_attempts or self._past_retry_for(job):
            self.retries_exhausted(task, job, exc)
            return
        strategy, delay = self.delay_for(task, count, exc, job)
        if strategy == "discard":
            job["discarded_at"] = self.config.job_clock()
            run_death_handlers(self.config, job, exc)
        elif strategy == "kill":
            self.retries_exhausted(task, job, exc)
        else:
            retry_at = time.time() + delay + jitter(count)
            self.connection.write(self.connection.client.zadd, keys.RETRY,
                                  {dumps(job): retry_at})

    @staticmethod
    def _past_retry_for(job: dict) -> bool:
        window = job.get("retry_for")
        if window is None:
            return False
        failed_at = to_epoch_seconds(job.get("failed_at"))
        return failed_at is not None and failed_at + int(window) < time.time()

    def delay_for(self, task, count: int, exc: BaseException, job: dict) -> tuple[str, int]:
        """Ask the task's `retry_in` hook; fall back to `count**4 + 15` seconds."""
        hook = getattr(task, "retry_in", None)
        value = None
        if hook is not None:
            try:
                value = hook(count, exc, job)
            except Exception as hook_exc:  # noqa: BLE001 - a user's hook: the default delay
                self.config.handle_exception(hook_exc, {"context": "Failure scheduling retry "
                                                                   "using the retry_in hook",
                                                        "job": job})
        if value in ("discard", "kill"):
            return value, 0
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
            return "retry", int(value)
        return "retry", base_delay(count)

    def retries_exhausted(self, task, job: dict, exc: BaseException) -> None:
        hook_owner = _find_task(job.get("wrapped"))
        hook = getattr(hook_owner or task, "retries_exhausted", None)
        outcome = None
        if hook is not None:
            try:
                outcome = hook(job, exc)
            except Exception as hook_exc:  # noqa: BLE001 - a user's hook: the job still dies
                self.config.handle_exception(hook_exc, {"context": "Error calling "
                                                                   "retries_exhausted",
                                                        "job": job})
        if outcome == "discard" or job.get("dead") is False:
            job["discarded_at"] = self.config.job_clock()
        else:
            send_to_dead(self.connection, self.config, dumps(job))
        run_death_handlers(self.config, job, exc)
