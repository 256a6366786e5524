"""Where the Pro and Enterprise features hook into the engine, in one place.

Each feature module (batches, limiters, unique jobs, encryption, expiring jobs) owns its
keys and its logic, and reaches the engine only through the hook points below. A hook
is switched on by a field in the job payload, so a job without that field pays one
dict lookup for it and nothing else, and a process whose jobs use no feature pays
nothing more than that:

- client hooks run at push time, after client middleware and the argument check, on
  jobs that carry their field (they may change the job, or return None to drop it);
- push interceptors see every batch of prepared jobs before it is written, and may take
  it over (the testing modes, a batch block collecting its jobs);
- job hooks wrap a fetched job's run, inside the retry guards and outside server
  middleware, outermost first by `order`;
- death hooks run when a job dies (retries exhausted, discarded, poisoned, killed),
  before the user's death handlers;
- error hooks claim exception classes any job's body may raise (a limiter's OverLimit)
  and settle such a job; they are looked at only when a job raises, inside every job
  hook, so a job that raises nothing pays nothing for them.

Client hooks learn why a job is pushed (`origin`): a new job, one the poller promotes
from `schedule` or `retry`, or one the data API revives from `dead` or `retry`, so a
feature can tell a job it already knows from a new one.

A hook that decided a job's fate without it failing (a limiter rescheduled it) raises
`JobHandled`: the job is acknowledged and counted neither as failed nor, for a batch,
as done.
"""

import importlib
import threading
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

# Why a job is being pushed: client hooks act differently on a job they see again.
PUSH = "push"            # a new job, from application code or the API
PROMOTION = "promotion"  # the poller moving a due job from `schedule`/`retry` to its queue
REVIVAL = "revival"      # the data API sending a dead or retrying job back to its queue

# True while an interceptor gathers this context's pushes to write them itself (a batch
# block): a push is then not held for a database commit, since its collector writes it.
COLLECTING: ContextVar[bool] = ContextVar("wurk_collecting", default=False)


class JobHandled(Exception):
    """A hook took care of the job (rescheduled it, skipped it on purpose): acknowledge it
    and book no failure. Raised by job hooks only; never reaches the retry logic."""


@dataclass(frozen=True)
class JobRun:
    """What a job hook may use about the job being run."""

    job: dict
    raw: bytes
    queue: str
    instance: Any
    config: Any
    connection: Any
    # The fetched unit (with reliable fetch, `unit.private_queue`); None for a job run
    # in the calling process (inline), which no feature may park or reschedule.
    unit: Any = None


@dataclass(frozen=True)
class ClientHook:
    field: str
    order: int
    # (job, client, origin) -> job, or None to drop the push
    prepare: Callable[[dict, Any, str], dict | None]
    # (job, config): undo `prepare` for a job that was prepared but will never be
    # written (a batch block that raised drops every job it collected)
    undo: Callable[[dict, Any], None] | None = None


@dataclass(frozen=True)
class JobHook:
    field: str
    order: int
    around: Callable[[JobRun, Callable[[], Any]], Any]
    # Also run for a job without the field whose task declares it as an option: a limit
    # the task promises must hold for a job pushed by its bare class name too.
    task_option: bool = False


@dataclass(frozen=True)
class DeathHook:
    field: str
    died: Callable[[dict, BaseException, Any], None]  # (job, exc, config)


@dataclass(frozen=True)
class ErrorHook:
    """Claims exceptions of `errors` raised by any job's body (a limiter's OverLimit): no
    payload field switches it on, since any job may raise them, so it costs nothing until
    a job raises. `settle(run, exc)` returns True when it settled the job (JobHandled
    follows), False to let the failure take its normal course; it may raise itself."""

    errors: tuple
    settle: Callable[[JobRun, BaseException], bool]


@dataclass
class Registry:
    """The hooks of every feature loaded in this process."""

    client: tuple = ()
    job: tuple = ()
    death: tuple = ()
    interceptors: tuple = ()
    error: tuple = ()
    # Every exception class an error hook claims, for `except HOOKS.claimed` (an empty
    # tuple matches nothing); read only when a job raised.
    claimed: tuple = ()
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, hook) -> None:
        """Register a hook once; tuples are swapped whole, so readers never lock."""
        kinds = {ClientHook: "client", JobHook: "job", DeathHook: "death",
                 ErrorHook: "error"}
        kind = kinds[type(hook)]
        with self._lock:
            hooks = getattr(self, kind)
            if hook not in hooks:
                hooks = hooks + (hook,)
                if kind in ("client", "job"):
                    hooks = tuple(sorted(hooks, key=lambda h: h.order))
                setattr(self, kind, hooks)
                self._claim()

    def add_interceptor(self, interceptor: Callable[[list, Any], bool],
                        first: bool = False) -> None:
        """`interceptor(jobs, config)` returns True when it took the jobs over. `first`
        puts it before the others (a batch block stamps its bid on jobs that the testing
        modes then record), whichever registered first."""
        with self._lock:
            if interceptor not in self.interceptors:
                if first:
                    self.interceptors = (interceptor,) + self.interceptors
                else:
                    self.interceptors = self.interceptors + (interceptor,)

    def remove(self, hook) -> None:
        with self._lock:
            for kind in ("client", "job", "death", "interceptors", "error"):
                hooks = getattr(self, kind)
                if hook in hooks:
                    setattr(self, kind, tuple(h for h in hooks if h is not hook))
            self._claim()

    def _claim(self) -> None:
        self.claimed = tuple(dict.fromkeys(e for hook in self.error for e in hook.errors))


HOOKS = Registry()

# The feature modules; each registers its hooks when imported. Every worker imports them
# all at start (a payload pushed by Ruby or another process may carry any feature's
# field), and so does every client (its hooks must see the first push).
FEATURE_MODULES: tuple[str, ...] = (
    "wurk_django.core.unique",
    "wurk_django.core.expiry",
    "wurk_django.core.encryption",
    "wurk_django.core.limiter",
    "wurk_django.core.concurrency",
    "wurk_django.core.batch_server",
)


def install() -> None:
    """Import every feature module once (imports are cached, so later calls are cheap)."""
    for name in FEATURE_MODULES:
        importlib.import_module(name)


def run_client_hooks(job: dict, client, origin: str = PUSH) -> dict | None:
    for hook in HOOKS.client:
        if hook.field in job:
            job = hook.prepare(job, client, origin)
            if job is None:
                return None
    return job


def undo_client_hooks(job: dict, config) -> None:
    """A prepared job is dropped unwritten: let each client hook take back what it did
    (a unique lock it took must not block the next push for its whole TTL)."""
    for hook in HOOKS.client:
        if hook.undo is not None and hook.field in job:
            try:
                hook.undo(job, config)
            except Exception as exc:  # noqa: BLE001 - one hook's error must not stop the others
                config.handle_exception(exc, {"context": f"undoing the {hook.field!r} hook "
                                                         f"of a dropped push failed",
                                              "job": job})


def intercepted(jobs: list, config) -> bool:
    """True when an interceptor took the jobs over (nothing is to be written)."""
    for interceptor in HOOKS.interceptors:
        if interceptor(jobs, config):
            return True
    return False


def job_hooks_for(job: dict, task_options=None) -> tuple:
    hooks = HOOKS.job
    if not hooks:
        return ()
    return tuple(hook for hook in hooks if hook.field in job
                 or (hook.task_option and task_options and hook.field in task_options))


def run_with_job_hooks(hooks: tuple, run: JobRun, final: Callable[[], Any]) -> Any:
    """Run `final` inside each hook's `around`, the first hook outermost. An error a
    hook claims is settled right around `final`, so every job hook sees JobHandled."""
    def step(index: int):
        if index == len(hooks):
            try:
                return final()
            except HOOKS.claimed as exc:
                settle_claimed(exc, run)
        return hooks[index].around(run, lambda: step(index + 1))

    return step(0)


def settle_claimed(exc: BaseException, run: JobRun):
    """Hand an exception of `HOOKS.claimed` to the first error hook claiming it: raise
    JobHandled when it settled the job, else the exception itself. Call it from an
    `except HOOKS.claimed` block."""
    for hook in HOOKS.error:
        if isinstance(exc, hook.errors):
            if hook.settle(run, exc):
                raise JobHandled() from exc
            break
    raise exc


def run_death_hooks(job: dict, exc: BaseException, config) -> None:
    for hook in HOOKS.death:
        if hook.field in job:
            try:
                hook.died(job, exc, config)
            except Exception as hook_exc:  # noqa: BLE001 - one hook's error must not stop the rest
                config.handle_exception(hook_exc, {"context": f"death hook for "
                                                              f"{hook.field!r} failed",
                                                   "job": job})
