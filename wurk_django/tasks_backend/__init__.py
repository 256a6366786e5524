"""Django's tasks framework on Wurk: `@task` functions run on Wurk workers, results by id.

    TASKS = {"default": {
        "BACKEND": "wurk_django.tasks_backend.WurkBackend",
        "QUEUES": ["default", "reports"],      # Django's allowed queue names
        "OPTIONS": {"RESULT_TTL": 86400, "RETRY": True, "TRANSACTIONAL": True},
    }}

Works with Django 6's `django.tasks` and, on Django 5.2, the `django-tasks` backport
(`django_tasks`); `compat` picks whichever is installed, preferring `django.tasks`.
Each Django queue is a Wurk queue of the same name; `manage.py wurk_worker` without
`-q` serves them besides WURK["QUEUES"] (wurk_django.task_queues).

OPTIONS (all optional):
    RESULT_TTL     seconds a result is kept after its last change (default
                   WURK["RESULT_TTL"], one day). A scheduled task, or one waiting for
                   a retry, is kept that long after the wait as well.
    RETRY          Wurk's retry option: True (WURK MAX_RETRIES, 25 by default), a count,
                   or False for none (default: WURK DEFAULT_JOB_OPTIONS, i.e. True).
                   False is pushed as `retry: 0, dead: false`, which Wurk handles as
                   `retry: false` (no retry, no dead entry) but which still calls the
                   hook that marks the result FAILED.
    TRANSACTIONAL  inside `atomic()`, push at commit and drop on rollback, as every
                   Wurk push (default WURK["TRANSACTIONAL"], True); or a database alias.

Wire envelope, one Sidekiq-compatible job per enqueue:

    {"class": "wurk_django.tasks_backend.TaskWrapper",
     "wrapped": "<task.module_path>", "display_class": "<task.module_path>",
     "queue": "<task.queue_name>", "jid": "<the result id>", "retry": ...,
     "args": [{"task": "<task.module_path>", "args": [...], "kwargs": {...},
               "backend": "<TASKS alias>", "queue_name": "...", "priority": 0}]}

`run_after` (a datetime, as Django's API has it; anything else is refused with
InvalidTask) becomes the push's `at`, so the job waits in `schedule` with that score.
Arguments follow Django's rules (its normalize_json), then must survive JSON.

Result record: JSON at `wurk:task-result:<jid>` (core.keys.task_result), every write
refreshing the TTL. Statuses:
    READY       pushed (or scheduled), not started; also after a failed attempt while
                Wurk has a retry booked ("ready to be executed again"), with that
                attempt's error in `errors`; and after a hard shutdown requeued it.
    RUNNING     an attempt is running; each start appends the worker's Wurk process
                identity to `worker_ids`, so `attempts` counts starts.
    SUCCESSFUL  the return value (Django's JSON normalisation) is stored.
    FAILED      final: no retry follows (RETRY exhausted or none); `errors` lists every
                failed attempt, oldest first, with class path and traceback text.
`started_at` is the first start, `last_attempted_at` the latest, `finished_at` the
time of SUCCESSFUL or FAILED. A failure is re-raised into Wurk's normal retry path;
TaskWrapper's `retry_in` hook (called only when a retry is booked) records READY and
its `retries_exhausted` hook records FAILED.

Transactions: inside `atomic()` the record and the push both wait for the commit, so
until then (and after a rollback) `get_result` raises TaskResultDoesNotExist, though
`enqueue` has already returned a READY result carrying the jid.

Priority: accepted (-100..100), stored in the envelope and the result, but it orders
nothing; Wurk queues are FIFO and workers pick among queues by weight, so send urgent
work to a queue with a higher weight.

Not covered: Wurk's fake and inline testing modes intercept the push but results still
go to Redis; use Django's DummyBackend or ImmediateBackend in tests that have no Redis.
"""

from .backend import WurkBackend
from .wrapper import TaskWrapper

__all__ = ["TaskWrapper", "WurkBackend"]
