"""The one import point for Django's tasks framework: Django 6's `django.tasks` when it
exists, else the `django-tasks` backport (`django_tasks`) used on Django 5.2."""

from importlib.util import find_spec
from typing import TYPE_CHECKING

# Chosen by presence, not by catching ImportError, so a real import error inside
# django.tasks is shown instead of silently falling back to the backport. The type
# checker reads the django.tasks branch (django-stubs types it; the backport mirrors it).
if TYPE_CHECKING or find_spec("django.tasks") is not None:
    from django.tasks import TaskContext, TaskResult, TaskResultStatus, task_backends
    from django.tasks.backends.base import BaseTaskBackend
    from django.tasks.base import Task, TaskError
    from django.tasks.exceptions import InvalidTask, InvalidTaskBackend, TaskResultDoesNotExist
    from django.tasks.signals import task_enqueued, task_finished, task_started
    from django.utils.json import normalize_json
else:
    from django_tasks import TaskContext, TaskResult, TaskResultStatus, task_backends
    from django_tasks.backends.base import BaseTaskBackend
    from django_tasks.base import Task, TaskError
    from django_tasks.exceptions import InvalidTaskBackendError as InvalidTaskBackend
    from django_tasks.exceptions import InvalidTaskError as InvalidTask
    from django_tasks.exceptions import TaskResultDoesNotExist
    from django_tasks.signals import task_enqueued, task_finished, task_started
    from django_tasks.utils import normalize_json

__all__ = ["BaseTaskBackend", "InvalidTask", "InvalidTaskBackend", "Task", "TaskContext",
           "TaskError", "TaskResult", "TaskResultDoesNotExist", "TaskResultStatus",
           "normalize_json", "task_backends", "task_enqueued", "task_finished", "task_started",
           "tasks_setting_given"]


def tasks_setting_given() -> bool:
    """Whether the settings set TASKS. Django 6 has a global default for it (one
    ImmediateBackend), the backport none, and a test may delete it: cover all three."""
    from django.conf import settings
    return hasattr(settings, "TASKS") and settings.is_overridden("TASKS")
