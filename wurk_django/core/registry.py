"""The registry of wire names: which task class runs a payload's `class`."""

import importlib
import threading
from typing import Any, ClassVar, Protocol

from .errors import DuplicateTaskError, UnknownTaskError

# How to get a task registered depends on how the process loads task modules, so each
# entry point sets the hint that fits it (Registry.import_hint).
IMPORT_HINT = "import the module that defines it in this process before the job runs"
CLI_IMPORT_HINT = ("start the worker with --require MODULE for the module that defines it "
                   "(python -m wurk_django.core --require myapp.tasks)")
DJANGO_IMPORT_HINT = ("a Django worker (manage.py wurk_worker) imports the tasks.py module of "
                      "every installed app: define the task in one, or import its module "
                      "from one")


class RegisteredTask(Protocol):
    """What the registry's users use of a task: the classes it holds are core/task.py's
    Job subclasses, described here because the task API imports the registry."""

    wire_name: ClassVar[str]
    resolved_options: ClassVar[dict]
    task_options: ClassVar[dict]
    cron_options: ClassVar[dict]
    call_options: ClassVar[dict]
    jid: str | None
    bid: str | None
    _interrupt: threading.Event | None  # set by the worker (Job.interrupted)

    def perform(self, *args: Any) -> Any: ...


class Registry:
    """Maps wire names to task classes; imports a dotted module on demand."""

    def __init__(self):
        self._tasks: dict[str, type[RegisteredTask]] = {}
        self._lock = threading.Lock()
        self.import_hint = IMPORT_HINT

    def register(self, name: str, task: type[RegisteredTask]) -> None:
        with self._lock:
            existing = self._tasks.get(name)
            if existing is not None and existing is not task and not _same_origin(existing, task):
                raise DuplicateTaskError(
                    f"task name {name!r} is already registered by "
                    f"{existing.__module__}.{existing.__qualname__}; pass name= to one of them")
            self._tasks[name] = task

    def unregister(self, name: str) -> None:
        with self._lock:
            self._tasks.pop(name, None)

    def find(self, name: str) -> type[RegisteredTask] | None:
        """Look a name up, importing its module once if the name is a dotted path."""
        task = self._tasks.get(name)
        if task is None and "." in name:
            _import_owner(name)
            task = self._tasks.get(name)
        return task

    def get(self, name: str) -> type[RegisteredTask]:
        task = self.find(name)
        if task is None:
            raise UnknownTaskError(
                f"no task named {name!r} is registered in this process; {self.import_hint}")
        return task

    def names(self) -> list[str]:
        return sorted(self._tasks)

    def __contains__(self, name: str) -> bool:
        return name in self._tasks


def _same_origin(old: type, new: type) -> bool:
    # A module imported twice (for example as __main__ and by name, or after a reload)
    # defines the same task again; that is not a clash between two tasks.
    return (old.__module__, old.__qualname__) == (new.__module__, new.__qualname__)


def _import_owner(name: str) -> None:
    """Import the longest importable module prefix of `a.b.C.method`."""
    parts = name.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        module = ".".join(parts[:cut])
        try:
            importlib.import_module(module)
            return
        except ModuleNotFoundError as exc:
            # Only "this prefix is not a module" means try a shorter one; a module that
            # exists but fails to import must show its own error.
            if exc.name and (module == exc.name or module.startswith(exc.name + ".")):
                continue
            raise


def task_class(obj) -> type[RegisteredTask] | None:
    """The task class behind a task object (a task class, or a `@wurk_task` function), else None.

    The task API marks its objects with `wurk_task_class` (itself for a task class, None for
    an abstract base, the class it wraps for a task function), so the client and the cron
    entries tell a task from a wire name without importing the task API, which pushes
    through the client. A task class carries `wire_name` and `resolved_options`.
    """
    found: type[RegisteredTask] | None = getattr(obj, "wurk_task_class", None)
    if not isinstance(found, type):
        return None
    if isinstance(obj, type):
        return found if found is obj else None
    return None if isinstance(obj, found) else found  # an instance of a task is not one


REGISTRY = Registry()
