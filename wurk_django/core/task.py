"""The task API: `@wurk_task`, `class X(Job)`, per-call options via `.set(...)`."""

import functools
import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, overload

from . import options as job_options
from . import testing_modes
from .batch import Batch, batch_valid
from .client import default_client
from .joblog import JobAdapter
from .payload import Interval, scheduled_at
from .registry import REGISTRY

DISCARD = "discard"
KILL = "kill"
DEFAULT = "default"

_JOB_LOGGER = logging.getLogger("wurk.job")
_HOOKS = ("retry_in", "retries_exhausted", "unique_context")


class Job:
    """Base class of every task; subclass it and define `perform(self, *args)`."""

    wurk_options: ClassVar[dict] = {}
    call_options: ClassVar[dict] = {}  # the task's own `sync` / `transactional`, per call
    retry_in: ClassVar[Callable | None] = None
    retries_exhausted: ClassVar[Callable | None] = None
    unique_context: ClassVar[Callable | None] = None  # (job) -> what makes jobs duplicates
    # The mark registry.task_class reads: the class itself once concrete, None for a base
    # (Job, and a subclass that sets `_abstract = True` in its own body).
    wurk_task_class: ClassVar[type["Job"] | None] = None
    # Set by __init_subclass__ on each concrete task class (not on Job itself).
    wire_name: ClassVar[str]
    resolved_options: ClassVar[dict]
    task_options: ClassVar[dict]
    cron_options: ClassVar[dict]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("_abstract"):
            cls.wurk_task_class = None  # an abstract base below a concrete task is no task
            return
        cls.wurk_task_class = cls
        owner = f"{cls.__module__}.{cls.__qualname__}"
        merged: dict = {}
        for base in reversed(cls.__mro__):
            merged.update(base.__dict__.get("wurk_options") or {})
        merged = job_options.normalize(merged, owner, job_options.TASK)
        for key in _HOOKS:
            if merged.get(key) is not None:
                setattr(cls, key, staticmethod(merged[key]))
        own = cls.__dict__.get("wurk_options") or {}
        # Options are inherited, the wire name is not: a subclass of `HardJob` must not
        # claim the name "HardJob" too.
        cls.wire_name = str(own.get("name") or owner)
        cls.resolved_options = job_options.payload_options(merged)
        cls.call_options = job_options.call_defaults(merged)
        cls.task_options = merged
        # Not inherited: a subclass of a periodic job is not periodic too. Checked with
        # the loops (cron.task_entries), so a bad expression is a system check error
        # rather than an import error in every command.
        cls.cron_options = job_options.cron_options(own)
        REGISTRY.register(cls.wire_name, cls)

    def __init__(self) -> None:
        self.jid: str | None = None
        self.bid: str | None = None  # set by the worker for a job of a batch
        self.logger = JobAdapter(_JOB_LOGGER, {})
        self._interrupt: threading.Event | None = None
        self._batch: Batch | None = None

    @property
    def batch(self) -> "Batch | None":
        """The batch this job belongs to, reopened (`with self.batch:` adds siblings), or
        None outside a batch."""
        if self.bid is None:
            return None
        if self._batch is None or self._batch.bid != self.bid:
            self._batch = Batch(self.bid)
        return self._batch

    def valid_within_batch(self) -> bool:
        """False once this job's batch was invalidated (return early); True outside one."""
        return self.bid is None or batch_valid(self.bid)

    def interrupted(self) -> bool:
        """True once the worker is quieting or stopping; long jobs may return early."""
        return self._interrupt is not None and self._interrupt.is_set()

    def perform(self, *args: Any) -> Any:
        raise NotImplementedError(f"{type(self).__qualname__} must define perform()")

    # --- pushing (class level) ----------------------------------------------------

    @classmethod
    def set(cls, **options: Any) -> "Setter":
        return Setter(cls, cls.call_options).set(**options)

    @classmethod
    def perform_async(cls, *args: Any) -> str | None:
        return Setter(cls, cls.call_options).perform_async(*args)

    @classmethod
    def perform_in(cls, interval: Interval, *args: Any) -> str | None:
        return Setter(cls, cls.call_options).perform_in(interval, *args)

    perform_at = perform_in

    @classmethod
    def perform_bulk(cls, args_list: Sequence[Sequence[Any]],
                     batch_size: int = 1000) -> list[str | None]:
        return Setter(cls, cls.call_options).perform_bulk(args_list, batch_size=batch_size)

    @classmethod
    def perform_inline(cls, *args: Any) -> Any:
        return Setter(cls, cls.call_options).perform_inline(*args)

    # --- fake-mode helpers (see testing_modes.py) ----------------------------------

    @classmethod
    def jobs(cls) -> list[dict]:
        return testing_modes.jobs_for(cls.wire_name)

    @classmethod
    def clear(cls) -> None:
        testing_modes.clear_class(cls.wire_name)

    @classmethod
    def drain(cls) -> int:
        return testing_modes.drain_class(cls.wire_name)

    @classmethod
    def perform_one(cls) -> None:
        testing_modes.perform_one(cls.wire_name)

    @classmethod
    def process_job(cls, job: dict) -> None:
        """Run one job dict as this task, through the testing server chain."""
        testing_modes.process_job({**job, "class": cls.wire_name})

    @classmethod
    def clear_all(cls) -> None:
        testing_modes.queues.clear_all()

    @classmethod
    def drain_all(cls) -> int:
        return testing_modes.drain_all()


class FunctionJob(Job):
    """The generated class behind a `@wurk_task` function."""

    _abstract = True
    function: ClassVar[Callable]

    def perform(self, *args: Any) -> Any:
        return type(self).function(*args)


class Setter:
    """Per-call options layered over a task's own, with the same `perform_*` methods."""

    __slots__ = ("task", "options")

    def __init__(self, task: type[Job], options: dict):
        self.task = task
        self.options = options

    def set(self, **options: Any) -> "Setter":
        """Options for the next push, checked here once (not again per push)."""
        options = job_options.normalize_call(options, f"{self.task.wire_name}.set()")
        return Setter(self.task, {**self.options, **options})

    def _item(self, args: tuple) -> dict:
        item = {"class": self.task, "args": list(args)}
        item.update(self.options)
        if item.get("at", 0) is None:
            del item["at"]
        return item

    def perform_async(self, *args: Any) -> str | None:
        if self.options.get("sync"):
            return self.perform_inline(*args)
        return default_client().push(self._item(args))

    def perform_in(self, interval: Interval, *args: Any) -> str | None:
        item = self._item(args)
        at = scheduled_at(interval)
        if at is None:
            item.pop("at", None)
        else:
            item["at"] = at
        return default_client().push(item)

    perform_at = perform_in

    def perform_bulk(self, args_list: Sequence[Sequence[Any]],
                     batch_size: int = 1000) -> list[str | None]:
        item = self._item(())
        item["args"] = args_list
        item["batch_size"] = batch_size
        return default_client().push_bulk(item)

    def perform_inline(self, *args: Any) -> Any:
        return testing_modes.run_inline(self._item(args))


class TaskFunction:
    """What `@wurk_task` returns: still callable as the plain function, plus `perform_*`."""

    def __init__(self, function: Callable, job_class: type[FunctionJob]):
        functools.update_wrapper(self, function)
        self.function = function
        self.job_class = job_class

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.function(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<wurk task {self.name}>"

    @property
    def name(self) -> str:
        return self.job_class.wire_name

    @property
    def wurk_task_class(self) -> type[FunctionJob]:
        return self.job_class  # the mark registry.task_class reads

    def set(self, **options: Any) -> Setter:
        return self.job_class.set(**options)

    def perform_async(self, *args: Any) -> str | None:
        return self.job_class.perform_async(*args)

    def perform_in(self, interval: Interval, *args: Any) -> str | None:
        return self.job_class.perform_in(interval, *args)

    perform_at = perform_in

    def perform_bulk(self, args_list: Sequence[Sequence[Any]],
                     batch_size: int = 1000) -> list[str | None]:
        return self.job_class.perform_bulk(args_list, batch_size=batch_size)

    def perform_inline(self, *args: Any) -> Any:
        return self.job_class.perform_inline(*args)

    def jobs(self) -> list[dict]:
        return self.job_class.jobs()

    def clear(self) -> None:
        self.job_class.clear()

    def drain(self) -> int:
        return self.job_class.drain()

    def perform_one(self) -> None:
        self.job_class.perform_one()

    def process_job(self, job: dict) -> None:
        self.job_class.process_job(job)


@overload
def wurk_task(function: Callable, /) -> TaskFunction: ...
@overload
def wurk_task(function: None = None, /, **options: Any) -> Callable[[Callable], TaskFunction]: ...
def wurk_task(function: Callable | None = None, /,
              **options: Any) -> TaskFunction | Callable[[Callable], TaskFunction]:
    """Register a function as a task: `@wurk_task` or `@wurk_task(queue=..., retry=...)`."""

    def decorate(fn: Callable) -> TaskFunction:
        namespace = {
            "__module__": fn.__module__,
            "__qualname__": fn.__qualname__,
            "__doc__": fn.__doc__,
            "wurk_options": options,
            "function": staticmethod(fn),
        }
        job_class = type(fn.__name__, (FunctionJob,), namespace)
        return TaskFunction(fn, job_class)

    if function is not None:
        return decorate(function)
    return decorate

