"""System checks for TASKS entries that use WurkBackend (ids wurk.E101 and wurk.E102), and
for `@task` functions left on Django's default backend because TASKS is unset (wurk.W103).

Run from `wurk_django.checks` under the `wurk` tag, so they run even when nothing has
imported the tasks framework (whose own checks only exist once it is imported).
"""

import sys
from collections.abc import Mapping

from django.apps import apps
from django.core.checks import Error, Warning
from django.utils.module_loading import import_string

from .backend import OPTION_KEYS, WurkBackend, option_problems, queue_problems
from .compat import Task, task_backends, tasks_setting_given

TASKS_HINT = ('Set TASKS = {"default": {"BACKEND": "wurk_django.tasks_backend.WurkBackend"}}, '
              "the same TASKS as the project that enqueues (a worker-only settings module "
              "needs it too), or set TASKS explicitly to keep Django's ImmediateBackend.")


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
    return errors + check_unset_tasks()


def check_unset_tasks() -> list:
    """Without TASKS, Django runs `@task` functions in the enqueuing process, and a Wurk
    worker with these settings fails every django.tasks job: warn when such tasks exist."""
    if tasks_setting_given():
        return []
    found = discovered_tasks()
    if not found:
        return []
    names = ", ".join(found[:5]) + (f" and {len(found) - 5} more" if len(found) > 5 else "")
    return [Warning(f"TASKS is not set, so Django's ImmediateBackend runs {names} in the "
                    f"process that enqueues them, and a Wurk worker with these settings "
                    f"fails every django.tasks job it is given.", hint=TASKS_HINT,
                    id="wurk.W103")]


def discovered_tasks() -> list[str]:
    """The `@task` functions in the installed apps' tasks modules (autodiscovered at start)."""
    found = []
    for app_config in apps.get_app_configs():
        module = sys.modules.get(f"{app_config.name}.tasks")
        found += [value.module_path for value in vars(module).values()
                  if isinstance(value, Task)] if module is not None else []
    return sorted(set(found))


def uses_wurk(params) -> bool:
    path = params.get("BACKEND") if isinstance(params, Mapping) else None
    if not isinstance(path, str):
        return False
    try:
        backend = import_string(path)
    except ImportError:
        return False  # the tasks framework reports a backend it cannot import
    return isinstance(backend, type) and issubclass(backend, WurkBackend)
