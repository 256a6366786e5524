"""The task API: `@wurk_task`, `class X(Job)`, per-call options via `.set(...)`."""

import functools
import logging
import threading
from datetime import timedelta
from typing import Any, Callable, ClassVar

from . import testmode
from .errors import JobArgumentError
from .payload import TRANSIENT_KEYS, scheduled_at
from .joblog import JobAdapter
from .registry import REGISTRY

DISCARD = "discard"
KILL = "kill"
DEFAULT = "default"

RETRY_FOR_MAX = 1_000_000_000
_JOB_LOGGER = logging.getLogger("wurk.job")
_CALLABLE_OPTIONS = ("retry_in", "retries_exhausted")
# `@wurk_task(cron="0 4 * * *", cron_args=[...], cron_tz="UTC")` registers a loop
# (ent §2.1); these options describe the loop and never reach a job payload.
CRON_OPTIONS = ("cron", "cron_args", "cron_tz")


def normalize_options(options: dict, owner: str) -> dict:
    """Check a task's options once, at definition time, so pushes stay cheap."""
    options = dict(options)
    for key in options:
        if not isinstance(key, str):
            raise JobArgumentError(f"{owner}: option keys must be str, got {key!r}")
    if "retry_for" in options and options["retry_for"] is not None:
        options["retry_for"] = retry_for_seconds(options["retry_for"])
    if "tags" in options and not isinstance(options["tags"], list):
        raise JobArgumentError(f"{owner}: 'tags' must be a list of strings")
    if "queue" in options and not str(options["queue"] or ""):
        raise JobArgumentError(f"{owner}: 'queue' must be a non-empty string")
    for key in _CALLABLE_OPTIONS:
        if options.get(key) is not None and not callable(options[key]):
            raise JobArgumentError(f"{owner}: {key!r} must be callable")
    return options


def cron_options(options: dict, owner: str) -> dict:
    """The loop a task registers itself as, checked at definition time; {} for none."""
    found = {key: options[key] for key in CRON_OPTIONS if options.get(key) is not None}
    if not found:
        return {}
    if "cron" not in found:
        raise JobArgumentError(f"{owner}: {', '.join(found)} given without 'cron'")
    from .cron_schedule import normalize_expression, zone_for
    from .errors import ConfigurationError
    try:
        normalize_expression(found["cron"])
        zone_for(found.get("cron_tz"))
    except ConfigurationError as exc:
        raise JobArgumentError(f"{owner}: cron: {exc}") from None
    return found


def retry_for_seconds(value) -> int:
    seconds = int(value.total_seconds() if isinstance(value, timedelta) else value)
    if seconds > RETRY_FOR_MAX:
        raise JobArgumentError(f"retry_for of {seconds} s is above the maximum {RETRY_FOR_MAX}")
    return seconds


class Job:
    """Base class of every task; subclass it and define `perform(self, *args)`."""

    wurk_options: ClassVar[dict] = {}
    retry_in: ClassVar[Callable | None] = None
    retries_exhausted: ClassVar[Callable | None] = None
    _abstract: ClassVar[bool] = True

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("_abstract"):
            return
        cls._abstract = False
        owner = f"{cls.__module__}.{cls.__qualname__}"
        merged = {}
        for base in reversed(cls.__mro__):
            merged.update(base.__dict__.get("wurk_options") or {})
        merged = normalize_options(merged, owner)
        for key in _CALLABLE_OPTIONS:
            if merged.get(key) is not None:
                setattr(cls, key, staticmethod(merged[key]))
        # Options are inherited, the wire name is not: a subclass of `HardJob` must not
        # claim the name "HardJob" too.
        own_name = (cls.__dict__.get("wurk_options") or {}).get("name")
        cls.wire_name = str(own_name or owner)
        cls.resolved_options = {k: v for k, v in merged.items()
                                if k not in TRANSIENT_KEYS and k not in CRON_OPTIONS}
        cls.task_options = merged
        # Not inherited: a subclass of a periodic job is not periodic too.
        cls.cron_options = cron_options(cls.__dict__.get("wurk_options") or {}, owner)
        REGISTRY.register(cls.wire_name, cls)

    def __init__(self):
        self.jid: str | None = None
        self.logger = JobAdapter(_JOB_LOGGER, {})
        self._interrupt: threading.Event | None = None

    def interrupted(self) -> bool:
        """True once the worker is quieting or stopping; long jobs may return early."""
        return self._interrupt is not None and self._interrupt.is_set()

    def perform(self, *args):
        raise NotImplementedError(f"{type(self).__qualname__} must define perform()")

    # --- pushing (class level) ----------------------------------------------------

    @classmethod
    def set(cls, **options) -> "Setter":
        return Setter(cls, {}).set(**options)

    @classmethod
    def perform_async(cls, *args) -> str | None:
        return Setter(cls, {}).perform_async(*args)

    @classmethod
    def perform_in(cls, interval, *args) -> str | None:
        return Setter(cls, {}).perform_in(interval, *args)

    perform_at = perform_in

    @classmethod
    def perform_bulk(cls, args_list, batch_size: int = 1000) -> list:
        return Setter(cls, {}).perform_bulk(args_list, batch_size=batch_size)

    @classmethod
    def perform_inline(cls, *args) -> Any:
        return Setter(cls, {}).perform_inline(*args)

    # --- fake-mode helpers (see testmode.py) ---------------------------------------

    @classmethod
    def jobs(cls) -> list[dict]:
        return testmode.jobs_for(cls.wire_name)

    @classmethod
    def clear(cls) -> None:
        testmode.clear_class(cls.wire_name)

    @classmethod
    def drain(cls) -> int:
        return testmode.drain_class(cls.wire_name)

    @classmethod
    def perform_one(cls) -> None:
        testmode.perform_one(cls.wire_name)

    @classmethod
    def process_job(cls, job: dict) -> None:
        """Run one job dict as this task, through the testing server chain."""
        testmode.process_job({**job, "class": cls.wire_name})

    @classmethod
    def clear_all(cls) -> None:
        testmode.queues.clear_all()

    @classmethod
    def drain_all(cls) -> int:
        return testmode.drain_all()


class FunctionJob(Job):
    """The generated class behind a `@wurk_task` function."""

    _abstract = True
    function: ClassVar[Callable]

    def perform(self, *args):
        return type(self).function(*args)


class Setter:
    """Per-call options layered over a task's own, with the same `perform_*` methods."""

    __slots__ = ("task", "options")

    def __init__(self, task: type[Job], options: dict):
        self.task = task
        self.options = options

    def set(self, **options) -> "Setter":
        options = dict(options)
        if "wait" in options:
            options["at"] = scheduled_at(options.pop("wait"))
        if "wait_until" in options:
            options["at"] = scheduled_at(options.pop("wait_until"))
        if options.get("retry_for") is not None:
            options["retry_for"] = retry_for_seconds(options["retry_for"])
        return Setter(self.task, {**self.options, **options})

    def _item(self, args: tuple) -> dict:
        item = {"class": self.task, "args": list(args)}
        item.update(self.options)
        if item.get("at", 0) is None:
            del item["at"]
        return item

    def perform_async(self, *args) -> str | None:
        if self.options.get("sync"):
            return self.perform_inline(*args)
        from .client import default_client
        return default_client().push(self._item(args))

    def perform_in(self, interval, *args) -> str | None:
        from .client import default_client
        item = self._item(args)
        at = scheduled_at(interval)
        if at is None:
            item.pop("at", None)
        else:
            item["at"] = at
        return default_client().push(item)

    perform_at = perform_in

    def perform_bulk(self, args_list, batch_size: int = 1000) -> list:
        from .client import default_client
        item = self._item(())
        item["args"] = args_list
        item["batch_size"] = batch_size
        return default_client().push_bulk(item)

    def perform_inline(self, *args) -> Any:
        from .inline import run_inline
        return run_inline(self._item(args))


class TaskFunction:
    """What `@wurk_task` returns: still callable as the plain function, plus `perform_*`."""

    def __init__(self, function: Callable, job_class: type[FunctionJob]):
        functools.update_wrapper(self, function)
        self.function = function
        self.job_class = job_class

    def __call__(self, *args, **kwargs):
        return self.function(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<wurk task {self.name}>"

    @property
    def name(self) -> str:
        return self.job_class.wire_name

    def set(self, **options) -> Setter:
        return self.job_class.set(**options)

    def perform_async(self, *args) -> str | None:
        return self.job_class.perform_async(*args)

    def perform_in(self, interval, *args) -> str | None:
        return self.job_class.perform_in(interval, *args)

    perform_at = perform_in

    def perform_bulk(self, args_list, batch_size: int = 1000) -> list:
        return self.job_class.perform_bulk(args_list, batch_size=batch_size)

    def perform_inline(self, *args) -> Any:
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


def wurk_task(function: Callable | None = None, /, **options: Any):
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


def task_class(obj) -> type[Job] | None:
    """The Job class behind a task object, class or function task alike."""
    if isinstance(obj, TaskFunction):
        return obj.job_class
    if isinstance(obj, type) and issubclass(obj, Job) and not obj._abstract:
        return obj
    return None
