"""Running jobs in the calling process: `perform_inline`, and the testing modes for
applications (`fake` records pushes, `inline` runs each at push time)."""

import contextlib
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import Any, cast

from .aio import resolve
from .client import CLAIM, Client
from .config import Config, get_default_config
from .errors import ConfigurationError, EmptyQueueError, TestModeAlreadySetError
from .features import HOOKS, JobRun, job_hooks_for, run_with_job_hooks
from .middleware import Chain
from .payload import dumps, encode_job, loads
from .redis import connection_for
from .registry import REGISTRY

DISABLE = "disable"
FAKE = "fake"
INLINE = "inline"
MODES = (DISABLE, FAKE, INLINE)

_global_mode = DISABLE
_local = threading.local()
server_middleware = Chain()  # the chain fake-mode helpers and inline mode run through


def active_mode() -> str:
    return getattr(_local, "mode", None) or _global_mode


def _check(mode: str) -> str:
    if mode not in MODES:
        raise ConfigurationError(f"unknown testing mode {mode!r}; use one of {MODES}")
    return mode


def set_mode(mode: str) -> None:
    """Set the mode for every thread until changed again."""
    global _global_mode
    _global_mode = _check(mode)
    HOOKS.add_interceptor(intercept)


def mode(name: str) -> AbstractContextManager[None]:
    """Use a mode in this thread for the block; blocks do not nest."""
    return _mode_block(_check(name))  # checked now, not when the block is entered


@contextlib.contextmanager
def _mode_block(name: str) -> Iterator[None]:
    if getattr(_local, "mode", None) is not None:
        raise TestModeAlreadySetError(f"already in testing mode {_local.mode!r}")
    HOOKS.add_interceptor(intercept)
    _local.mode = name
    try:
        yield
    finally:
        _local.mode = None


class FakeQueues:
    """Jobs pushed in fake mode, per queue, in push order."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: dict[str, list[dict]] = {}

    def push(self, job: dict) -> None:
        with self._lock:
            self._jobs.setdefault(job["queue"], []).append(job)

    @property
    def jobs_by_queue(self) -> dict[str, list[dict]]:
        with self._lock:
            return {queue: list(jobs) for queue, jobs in self._jobs.items()}

    @property
    def jobs_by_class(self) -> dict[str, list[dict]]:
        grouped: dict[str, list[dict]] = {}
        for jobs in self.jobs_by_queue.values():
            for job in jobs:
                grouped.setdefault(job["class"], []).append(job)
        return grouped

    def take(self, klass: str | None = None) -> dict | None:
        """Remove and return the oldest job (of a class, if given)."""
        with self._lock:
            for jobs in self._jobs.values():
                for index, job in enumerate(jobs):
                    if klass is None or job["class"] == klass:
                        return jobs.pop(index)
        return None

    def clear_class(self, klass: str) -> None:
        with self._lock:
            for queue, jobs in self._jobs.items():
                self._jobs[queue] = [job for job in jobs if job["class"] != klass]

    def clear_all(self) -> None:
        with self._lock:
            self._jobs.clear()


queues = FakeQueues()


def intercept(jobs: list[dict], config) -> bool:
    """The client's push hook: record or run the jobs while a mode is active (True), else
    leave them to the client (False)."""
    current = getattr(_local, "mode", None) or _global_mode  # active_mode(), one call less
    if current == DISABLE:
        return False
    for job in jobs:
        if current == FAKE:
            if "at" not in job:
                job["enqueued_at"] = config.job_clock()
            queues.push(loads(encode_job(job)))
        else:
            process_job(loads(encode_job(job)), config)
    return True


def process_job(job: dict, config: Config | None = None) -> None:
    """Run one job dict through the testing server chain; exceptions reach the caller."""
    perform_in_chain(job, config or get_default_config(), server_middleware)


def jobs_for(klass: str) -> list[dict]:
    return queues.jobs_by_class.get(klass, [])


def clear_class(klass: str) -> None:
    queues.clear_class(klass)


def perform_one(klass: str) -> None:
    job = queues.take(klass)
    if job is None:
        raise EmptyQueueError(f"no {klass} jobs are queued")
    process_job(job)


def drain_class(klass: str) -> int:
    """Run queued jobs of a class until none is left, including ones they push."""
    ran = 0
    while (job := queues.take(klass)) is not None:
        process_job(job)
        ran += 1
    return ran


def drain_all() -> int:
    ran = 0
    while (job := queues.take()) is not None:
        process_job(job)
        ran += 1
    return ran


# --- running a job here -------------------------------------------------------------

def perform_in_chain(job: dict, config, chain) -> tuple[bool, Any]:
    """Run `perform` inside a server middleware chain: whether it ran (False if a
    middleware halted it) and what `perform` returned (None when it did not run)."""
    task = REGISTRY.get(job["class"])
    instance = task()
    instance.jid = job.get("jid")
    returned = []

    def perform():
        returned.append(resolve(instance.perform(*job["args"])))
        return True  # perform's own return value must not read as a halt

    def run_chain():
        return chain.invoke(config, (instance, job, job.get("queue")), perform)

    # The features' job hooks wrap the run here as in a worker (decryption, expiry, the
    # release of a unique lock), so a job behaves alike inline and fetched.
    hooks = job_hooks_for(job) if HOOKS.job else ()
    if hooks:
        queue = cast(str, job.get("queue"))  # set by the client's normalising
        run = JobRun(job, dumps(job), queue, instance, config, connection_for(config))
        ran = bool(run_with_job_hooks(hooks, run, run_chain))
    else:
        ran = bool(run_chain())
    return ran, returned[0] if ran and returned else None


def run_inline(item: dict, config: Config | None = None) -> Any:
    """Normalise, run client middleware, JSON round trip, then execute here and now.

    Returns what the task returned, as calling it would; None if a client or server
    middleware halted it. Exceptions reach the caller and no retry is booked; Redis is
    never touched.
    """
    client = Client(config)
    item = dict(item)
    item.pop("at", None)
    job = client.prepare(client.normalize(item))
    if job is None:
        return None
    if CLAIM in job and client.settle_claims([job])[1]:
        return None  # a unique job whose lock another job holds
    return perform_in_chain(loads(dumps(job)), client.config,
                            client.config.server_middleware)[1]


class testing:  # lower case: used as `wurk_django.testing("fake")`, like a function
    """`wurk_django.testing`: call it with a mode for a block, or use `set_mode`.

    A class rather than a callable instance: pytest collects any callable whose name
    starts with "test" from a user's test module and warns, but skips lowercase classes.
    """

    DISABLE, FAKE, INLINE = DISABLE, FAKE, INLINE
    set_mode = staticmethod(set_mode)
    active_mode = staticmethod(active_mode)
    drain_all = staticmethod(drain_all)
    queues = queues
    server_middleware = server_middleware

    # The call returns the mode's block, not an instance (hence the ignore).
    def __new__(cls, name: str) -> AbstractContextManager[None]:  # type: ignore[misc]
        return mode(name)
