"""The Wurk queues that django.tasks backends push to, so that `wurk_worker` serves them.

A TASKS entry's QUEUES (e.g. ["default", "reports"]) are the queue names Django lets
its `@task` functions use; each is a Wurk queue of the same name. A worker started
without `-q` serves them besides WURK["QUEUES"]: otherwise a task enqueued to
"reports" would wait forever, with nothing to say why. With `-q` the worker serves
exactly what it is told and warns about the task queues left out.
"""

import logging
from importlib.util import find_spec

logger = logging.getLogger("wurk")


def task_queues() -> dict[str, str]:
    """Each queue of a Wurk-backed TASKS entry, mapped to the first alias naming it."""
    if find_spec("django.tasks") is None and find_spec("django_tasks") is None:
        return {}  # no tasks framework installed, so TASKS is not in use
    from .tasks_backend.checks import uses_wurk
    from .tasks_backend.compat import task_backends
    found: dict[str, str] = {}
    for alias, params in task_backends.settings.items():
        if not uses_wurk(params):
            continue
        queues = params.get("QUEUES", ["default"])
        if isinstance(queues, (list, tuple, set, frozenset)):
            # Malformed names are the system checks' business (wurk.E102): skip them.
            for name in queues:
                if isinstance(name, str) and name and name == name.strip() and "," not in name:
                    found.setdefault(name, alias)
    return found


def serve_task_queues(config, *, explicit: bool):
    """The config a worker runs: with the task queues it lacks added, unless `explicit`
    (queues given with -q), in which case those left out are only named in a warning."""
    served = {name for capsule in config.capsules_ for name in capsule.queue_names}
    missing = {name: alias for name, alias in task_queues().items() if name not in served}
    if not missing:
        return config
    described = ", ".join(f"{name!r} (TASKS[{alias!r}])" for name, alias in missing.items())
    if explicit:
        logger.warning("not serving the django.tasks queue(s) %s: their jobs wait until a "
                       "worker serves them; add -q %s", described, " -q ".join(missing))
        return config
    # After WURK["QUEUES"], at their lowest weight: the same strict, random or weighted
    # order as before, with the task queues last in it.
    weight = min(weight for _, weight in config.queues)
    logger.info("also serving the django.tasks queue(s) %s", described)
    return config.replace(queues=(*config.queues, *((name, weight) for name in missing)))
