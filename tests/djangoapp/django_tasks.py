"""Django `@task` functions for the tasks-backend tests (not autodiscovered by Wurk)."""

import time

try:
    from django.tasks import task
except ImportError:  # Django 5.2: the django-tasks backport
    from django_tasks import task


class TaskBoom(ValueError):
    """Raised by the failing tasks, so tests can check the recorded class path."""


@task
def add(a, b):
    return a + b


@task(queue_name="reports")
def report(name, *, pages=1):
    return {"name": name, "pages": pages}


@task
def echo(*args, **kwargs):
    return {"args": args, "kwargs": kwargs}


@task
async def async_double(value):
    return value * 2


@task(takes_context=True)
def describe_attempt(context, label):
    return {"attempt": context.attempt, "id": context.task_result.id, "label": label}


@task(takes_context=True)
def flaky(context, succeed_on_attempt):
    if context.attempt < succeed_on_attempt:
        raise TaskBoom(f"attempt {context.attempt} failed")
    return context.attempt


@task
def explode(message):
    raise TaskBoom(message)


@task(backend="once")
def explode_once(message):
    raise TaskBoom(message)


@task
def unserialisable():
    return object()


@task
def stall(seconds):
    # Short sleeps keep the thread interruptible by a hard shutdown.
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        time.sleep(0.02)
    return "finished"
