"""System checks for TASKS entries that use WurkBackend (ids wurk.E101 and wurk.E102).

Run from `wurk_django.checks` under the `wurk` tag, so they run even when nothing has
imported the tasks framework (whose own checks only exist once it is imported).
"""

from collections.abc import Mapping

from django.core.checks import Error
from django.utils.module_loading import import_string

from .backend import OPTION_KEYS, WurkBackend, option_problems, queue_problems
from .compat import task_backends


def check_task_backends() -> list:
    errors = []
    for alias, params in task_backends.settings.items():
        if not uses_wurk(params):
            continue
        errors += [Error(f"TASKS[{alias!r}]: {problem}.",
                         hint=f"OPTIONS accepts {', '.join(OPTION_KEYS)}; see the "
                              f"wurk_django.tasks_backend docstring.", id="wurk.E101")
                   for problem in option_problems(params)]
        errors += [Error(f"TASKS[{alias!r}]: {problem}.",
                         hint='For example "QUEUES": ["default", "reports"].',
                         id="wurk.E102")
                   for problem in queue_problems(params)]
    return errors


def uses_wurk(params) -> bool:
    path = params.get("BACKEND") if isinstance(params, Mapping) else None
    if not isinstance(path, str):
        return False
    try:
        backend = import_string(path)
    except ImportError:
        return False  # the tasks framework reports a backend it cannot import
    return isinstance(backend, type) and issubclass(backend, WurkBackend)
