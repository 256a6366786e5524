"""`WurkBackend`: Django's task backend API on top of Wurk's client and result records."""

import time
from collections.abc import Mapping
from datetime import datetime

from .. import conf
from ..core.client import Client
from ..core.config import get_default_config
from ..core.payload import dumps, loads, new_jid, now_ms, scheduled_at
from ..core.redis import REDIS_ERRORS, connection_for
from . import results
from .compat import (
    BaseTaskBackend,
    InvalidTask,
    InvalidTaskBackend,
    TaskResultDoesNotExist,
    normalize_json,
    task_enqueued,
)

OPTION_KEYS = ("RESULT_TTL", "RETRY", "TRANSACTIONAL")
# The wire class of every job this backend pushes: wrapper.TaskWrapper registers under it
# and runs the task its envelope names. Pushed by name, so the backend needs only the
# name and the wrapper, which looks its backend up on the worker, may import the backend.
WIRE_NAME = "wurk_django.tasks_backend.TaskWrapper"


def option_problems(params: Mapping) -> list[str]:
    """What is wrong with a TASKS entry's OPTIONS, as sentences (empty when valid)."""
    options = params.get("OPTIONS", {})
    if not isinstance(options, Mapping):
        return [f"OPTIONS must be a dict, got {type(options).__name__}"]
    problems = [f"unknown OPTIONS key {key!r} (known: {', '.join(OPTION_KEYS)})"
                for key in options if key not in OPTION_KEYS]
    ttl = options.get("RESULT_TTL", 1)
    if isinstance(ttl, bool) or not isinstance(ttl, int) or ttl < 1:
        problems.append(f"OPTIONS['RESULT_TTL'] must be whole seconds >= 1, got {ttl!r}")
    retry = options.get("RETRY", True)
    if not isinstance(retry, int) or (not isinstance(retry, bool) and retry < 0):
        problems.append(f"OPTIONS['RETRY'] must be True, False or a count >= 0, got {retry!r}")
    transactional = options.get("TRANSACTIONAL", True)
    if not isinstance(transactional, (bool, str)):
        problems.append(f"OPTIONS['TRANSACTIONAL'] must be True, False or a database alias, "
                        f"got {transactional!r}")
    return problems


def queue_problems(params: Mapping) -> list[str]:
    """QUEUES must be a list of names a Wurk worker can poll with `-q NAME`."""
    queues = params.get("QUEUES", ["default"])
    if isinstance(queues, str) or not isinstance(queues, (list, tuple, set, frozenset)):
        return [f"QUEUES must be a list of queue names, got {queues!r}"]
    return [f"QUEUES entry {name!r} is not a usable Wurk queue name (a non-empty string "
            f"without commas or spaces)" for name in queues
            if not isinstance(name, str) or not name or "," in name or name != name.strip()]


def retry_options(retry) -> dict:
    """The payload's retry keys. Never `retry: false`: Wurk would then run no hook and the
    result could not turn FAILED, so "no retries" is `retry: 0` with `dead: false`,
    which Wurk treats the same way (no retry, no dead entry, death handlers run)."""
    if retry is False or retry is None:
        return {"retry": 0, "dead": False}
    return {"retry": retry}


class WurkBackend(BaseTaskBackend):
    """Runs `@task` functions on Wurk workers; results are kept in Redis by jid.

    `priority` is accepted, validated and stored but does not reorder anything: Wurk
    queues are FIFO and a worker picks among queues by their weights.
    """

    supports_defer = True
    supports_async_task = True
    supports_get_result = True
    supports_priority = True

    def __init__(self, alias, params):
        super().__init__(alias, params)
        # Reported by the `wurk` system checks; raised only when the backend is used,
        # so one bad entry cannot break `manage.py check` or module imports.
        self.problems = option_problems(params) + queue_problems(params)

    @property
    def result_ttl_s(self) -> int:
        return self.options.get("RESULT_TTL") or conf.result_ttl_s()

    def store(self) -> results.ResultStore:
        return results.ResultStore(connection_for(get_default_config()), self.result_ttl_s)

    def validate_task(self, task):
        # Task.using() takes any run_after, and Django's own check then fails on anything
        # but a datetime with an AttributeError from is_aware() (USE_TZ) or later here.
        run_after = task.run_after
        if run_after is not None and not isinstance(run_after, datetime):
            raise InvalidTask(f"run_after must be a datetime, such as timezone.now() + "
                              f"timedelta(minutes=5); got {type(run_after).__name__} "
                              f"{run_after!r}")
        super().validate_task(task)

    def enqueue(self, task, args, kwargs):
        if self.problems:
            raise InvalidTaskBackend(f"TASKS[{self.alias!r}]: {'; '.join(self.problems)}")
        self.validate_task(task)
        enqueued_at_ms = now_ms()
        envelope = self._envelope(task, args, kwargs)
        at = scheduled_at(task.run_after) if task.run_after is not None else None
        record = results.new_record(
            envelope, enqueued_at_ms=enqueued_at_ms,
            run_after_ms=results.to_ms(task.run_after) if task.run_after else None)
        result = results.to_task_result(new_jid(), record, task)
        item = self._job_item(task, result.id, envelope, at)
        self._push_on_commit(lambda: self._push(item, record, result, at))
        return result

    def get_result(self, result_id):
        record = self.store().read(result_id)
        if record is None:
            raise TaskResultDoesNotExist(result_id)
        return results.to_task_result(result_id, record)

    def _envelope(self, task, args, kwargs) -> dict:
        # Django's normalisation first (tuples become lists, bytes text, and it refuses
        # other types), then a JSON round trip, so str/int subclasses such as
        # TextChoices members leave as plain values and NaN is refused here.
        envelope = {"task": task.module_path, "args": normalize_json(args),
                    "kwargs": normalize_json(kwargs), "backend": self.alias,
                    "queue_name": task.queue_name, "priority": task.priority}
        return loads(dumps(envelope))

    def _job_item(self, task, jid: str, envelope: dict, at: float | None) -> dict:
        retry = self.options.get("RETRY", get_default_config().default_job_options.get("retry"))
        item = {"class": WIRE_NAME, "wrapped": task.module_path,
                "display_class": task.module_path, "queue": task.queue_name,
                "args": [envelope], "jid": jid, **retry_options(retry),
                # The backend has already waited for the commit (below) when it should.
                "transactional": False}
        if at is not None:
            item["at"] = at
        return item

    def _push_on_commit(self, push) -> None:
        """Push now, or when the surrounding atomic() block commits (dropped on rollback),
        by the same rule and setting as every Wurk push (WURK['TRANSACTIONAL'])."""
        deferrer = get_default_config().push_deferrer
        if deferrer is None or not deferrer(push, self.options.get("TRANSACTIONAL")):
            push()

    def _push(self, item: dict, record: dict, result, at: float | None) -> None:
        # The record goes first: a worker may start the job before push() returns.
        store = self.store()
        store.write(result.id, record, extra_ttl_s=max(0.0, (at or 0) - time.time()))
        try:
            pushed = Client().push(item)
        except BaseException:
            _forget(store, result.id)
            raise
        if pushed is None:  # halted by client middleware: no job, so no result either
            _forget(store, result.id)
            return
        task_enqueued.send(type(self), task_result=result)


def _forget(store: results.ResultStore, jid: str) -> None:
    """Drop the record of a job that was not pushed; the push's own error matters more."""
    try:
        store.delete(jid)
    except REDIS_ERRORS:
        pass
