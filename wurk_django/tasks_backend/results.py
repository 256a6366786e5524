"""The result record of one django.tasks job: a JSON object per jid in Redis, kept for a
TTL that every write refreshes, and its translation to and from Django's TaskResult."""

import traceback
from datetime import UTC, datetime

from django.utils import timezone
from django.utils.module_loading import import_string

from ..core import keys
from ..core.payload import dumps, loads, now_ms
from .compat import Task, TaskError, TaskResult, TaskResultStatus

READY = TaskResultStatus.READY.value
RUNNING = TaskResultStatus.RUNNING.value
SUCCESSFUL = TaskResultStatus.SUCCESSFUL.value
FAILED = TaskResultStatus.FAILED.value

# What a worker needs to run the task and to rebuild the record if it has expired;
# the job's one argument holds exactly these keys.
ENVELOPE_KEYS = ("task", "args", "kwargs", "backend", "queue_name", "priority")
# A traceback longer than this keeps its end, where the exception line is.
TRACEBACK_MAX_CHARS = 50_000


class ResultStore:
    """Reads and writes records; each write sets the key's TTL anew."""

    def __init__(self, connection, ttl_s: int):
        self.connection = connection
        self.ttl_s = ttl_s

    def read(self, jid: str) -> dict | None:
        raw = self.connection.read(self.connection.client.get, keys.task_result(jid))
        return None if raw is None else loads(raw)

    def write(self, jid: str, record: dict, extra_ttl_s: float = 0) -> None:
        """Store the record for the TTL plus `extra_ttl_s` (time it is known to wait)."""
        ttl_s = max(1, int(self.ttl_s + extra_ttl_s))
        self.connection.write(self.connection.client.set, keys.task_result(jid),
                              dumps(record), ex=ttl_s)

    def update(self, jid: str, envelope: dict, change, extra_ttl_s: float = 0) -> dict:
        """Apply `change` to the stored record (rebuilt from the envelope if it expired).

        Only the worker running the job writes after enqueue, one step at a time, so a
        read-modify-write needs no lock.
        """
        record = self.read(jid) or new_record(envelope)
        change(record)
        self.write(jid, record, extra_ttl_s)
        return record

    def delete(self, jid: str) -> None:
        self.connection.write(self.connection.client.delete, keys.task_result(jid))


def new_record(envelope: dict, *, enqueued_at_ms: int | None = None,
               run_after_ms: int | None = None) -> dict:
    record = {key: envelope[key] for key in ENVELOPE_KEYS}
    record.update(status=READY, enqueued_at=enqueued_at_ms, run_after=run_after_ms,
                  started_at=None, last_attempted_at=None, finished_at=None,
                  worker_ids=[], errors=[], return_value=None)
    return record


def envelope_of(record: dict) -> dict:
    return {key: record[key] for key in ENVELOPE_KEYS}


# --- transitions (record dicts, changed in place) ------------------------------------

def mark_running(record: dict, worker_id: str) -> None:
    started = now_ms()
    record.update(status=RUNNING, last_attempted_at=started, finished_at=None)
    if record["started_at"] is None:
        record["started_at"] = started
    record["worker_ids"].append(worker_id)


def mark_successful(record: dict, value) -> None:
    record.update(status=SUCCESSFUL, return_value=value, finished_at=now_ms())


def mark_failed(record: dict, exc: BaseException, *, final: bool) -> None:
    """Add the attempt's error; FAILED when no retry follows, READY while one is booked."""
    record["errors"].append({"exception_class_path": exception_class_path(exc),
                             "traceback": traceback_text(exc)})
    record.update(status=FAILED if final else READY, finished_at=now_ms() if final else None)


def mark_requeued(record: dict) -> None:
    """A hard shutdown interrupted the attempt and put the job back on its queue."""
    record.update(status=READY, finished_at=None)


def exception_class_path(exc: BaseException) -> str:
    # Django's form (`builtins.ValueError` too), so TaskError.exception_class can import it.
    kind = type(exc)
    return f"{kind.__module__}.{kind.__qualname__}"


def traceback_text(exc: BaseException) -> str:
    text = "".join(traceback.format_exception(exc))
    return text[-TRACEBACK_MAX_CHARS:]


# --- Django's view of a record -------------------------------------------------------

def load_task(record: dict, run_after: datetime | None = None) -> Task:
    """The Task at the record's dotted path, with the options it was enqueued with."""
    task = import_string(record["task"])
    if not isinstance(task, Task):
        raise TypeError(f"{record['task']!r} is not a task (decorate it with @task)")
    return task.using(backend=record["backend"], queue_name=record["queue_name"],
                      priority=record["priority"], run_after=run_after)


def to_task_result(jid: str, record: dict, task: Task | None = None) -> TaskResult:
    run_after = to_datetime(record.get("run_after"))
    result: TaskResult = TaskResult(
        task=task or load_task(record, run_after), id=jid,
        status=TaskResultStatus(record["status"]),
        enqueued_at=to_datetime(record["enqueued_at"]),
        started_at=to_datetime(record["started_at"]),
        finished_at=to_datetime(record["finished_at"]),
        last_attempted_at=to_datetime(record["last_attempted_at"]),
        args=record["args"], kwargs=record["kwargs"], backend=record["backend"],
        errors=[TaskError(**error) for error in record["errors"]],
        worker_ids=list(record["worker_ids"]))
    object.__setattr__(result, "_return_value", record["return_value"])
    return result


def to_ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def to_datetime(value_ms: int | None) -> datetime | None:
    if value_ms is None:
        return None
    moment = datetime.fromtimestamp(value_ms / 1000, UTC)
    # Match timezone.now(): aware exactly when USE_TZ is on, as Django's backends do.
    return moment if timezone.is_aware(timezone.now()) else timezone.make_naive(moment)
