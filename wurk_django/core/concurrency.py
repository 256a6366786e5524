"""Cluster-wide concurrency of a task (`@wurk_task(concurrency=5)`, per tenant with
`concurrency_key`): at most that many of its jobs run at once across every process; the
others wait in Redis, holding no thread and polling nothing, and start as soon as a slot
frees.

The client stamps each job with its concurrency key. In the worker a job hook takes a
leased slot or parks the job in the key's waiting list (one script, which also takes the
job out of the process's private list); when the job ends, one script frees the slot and
moves the next waiting job to the front of its queue with a slot kept for it. A keeper
thread renews the leases of running jobs, so a SIGKILLed process's slot frees when its
lease ends, and sweeps waiting lists whose slots were freed that way.
"""

import json
import logging
import os
import threading

from . import keys
from .errors import JobArgumentError
from .features import HOOKS, ClientHook, JobHandled, JobHook, JobRun
from .limiter_algorithms import SCRIPTS
from .options import concurrency_limit
from .outage import OutageLog
from .payload import dumps, loads
from .redis import REDIS_ERRORS
from .registry import REGISTRY
from .timer_loop import TimerLoop

logger = logging.getLogger("wurk")

FIELD = "concurrency"
ORDER = 20  # outside most hooks: a parked job should not reach them
KEEPER_TICK_S = 1.0
SWEEP_BATCH = 50


def stamp_for(job: dict) -> dict:
    """The job's concurrency stamp: `{"key", "limit", "lease_s"}`. The key is the task's
    wire name, plus `concurrency_key(*args)` when the task has one."""
    spec = concurrency_limit(job[FIELD], f"{job.get('class')}: 'concurrency'")
    key = str(job["class"])
    task = _task(key)
    key_fn = task.task_options.get("concurrency_key") if task is not None else None
    if key_fn is not None:
        try:
            part = key_fn(*job["args"])
        except Exception as exc:
            raise JobArgumentError(f"{key}: concurrency_key{tuple(job['args'])!r:.100} "
                                   f"failed: {exc!r}") from exc
        if not isinstance(part, (str, int)) or isinstance(part, bool) or part == "":
            raise JobArgumentError(f"{key}: concurrency_key must return a non-empty string "
                                   f"or a number, got {part!r:.100}")
        key = f"{key}:{part}"
    return {"key": key, **spec}


def _task(name: str):
    try:
        return REGISTRY.find(name)
    except Exception:  # noqa: BLE001 - a module failing to import: use the class name
        return None


def _stamped(job: dict) -> dict | None:
    spec = job.get(FIELD)
    if isinstance(spec, dict) and isinstance(spec.get("key"), str):
        return spec
    return None


def prepare(job: dict, client, origin: str) -> dict:
    """Client hook: stamp the key once; a job seen again (promoted, revived) keeps it."""
    if _stamped(job) is None:
        job[FIELD] = stamp_for(job)
    return job


def around(run: JobRun, call_next):
    """Job hook: run inside a slot, or park the job until one frees (acked, not failed).
    A job run inline (no worker fetched it) runs at once: the limit is the cluster's."""
    if run.unit is None:
        return call_next()
    spec, parked = _stamped(run.job), run.raw
    if spec is None:
        # Pushed by its bare class name, or by a client without this hook: the task's
        # own option holds, and the job waits stamped, as a pushed one would.
        options = getattr(run.instance, "task_options", None) or {}
        try:
            spec = stamp_for({**run.job, FIELD: run.job.get(FIELD, options.get(FIELD))})
        except JobArgumentError as exc:
            logger.warning("Job %s: %s; running it without a concurrency limit",
                           run.job.get("jid"), exc)
            return call_next()
        parked = dumps({**loads(run.raw), FIELD: spec})
    jid = str(run.job.get("jid"))
    slots = keys.concurrency_slots(spec["key"])
    KEEPER.ensure(run.config, run.connection)
    if _acquire(run, spec, slots, parked) != 1:
        raise JobHandled()
    KEEPER.hold(slots, jid, spec["lease_s"])
    try:
        return call_next()
    finally:
        KEEPER.drop(slots, jid)
        _release(run.connection, spec, slots, jid, run.queue)


def _acquire(run: JobRun, spec: dict, slots: str, parked: bytes) -> int:
    waiting = keys.concurrency_waiting(spec["key"], run.queue)
    private = getattr(run.unit, "private_queue", None)
    command = SCRIPTS.command(
        "task_concurrency_acquire", (slots, waiting, private or waiting, keys.CONCURRENCY_WAITING),
        (str(run.job.get("jid")), spec["limit"], spec["lease_s"], run.raw,
         "1" if private else "0", _member(spec["key"], run.queue), parked))
    return SCRIPTS.run(run.connection, [command])[0]


def release_command(spec: dict, slots: str, jid: str, queue: str) -> tuple:
    """Free `jid`'s slot ('' frees none) and move waiting jobs into the free slots."""
    return SCRIPTS.command(
        "task_concurrency_release",
        (slots, keys.concurrency_waiting(spec["key"], queue), keys.queue(queue), keys.QUEUES,
         keys.CONCURRENCY_WAITING),
        (jid, spec["limit"], spec["lease_s"], queue, _member(spec["key"], queue)))


def _release(connection, spec: dict, slots: str, jid: str, queue: str) -> None:
    try:
        SCRIPTS.run(connection, [release_command(spec, slots, jid, queue)])
    except REDIS_ERRORS as exc:
        # The job is done: failing it now would run it again. Its slot frees when the
        # lease ends, and the keeper's sweep moves the next waiting job then.
        logger.warning("Could not free the concurrency slot of job %s (%s); it frees "
                       "when its lease ends", jid, exc)


def _member(key: str, queue: str) -> str:
    return json.dumps([key, queue], separators=(",", ":"))


class Keeper:
    """Per worker process, started by its first job with a concurrency limit: every
    second it renews the leases of the slots its running jobs hold, and sweeps some
    waiting lists, moving their jobs into slots that expired leases freed."""

    def __init__(self):
        self._held: dict[str, dict[str, float]] = {}  # slots key -> {jid: lease_s}
        self._lock = threading.Lock()
        self._loop: TimerLoop | None = None
        self._pid = 0
        self._connection = None

    def ensure(self, config, connection) -> None:
        if self._pid == os.getpid() and self._loop is not None:
            return
        with self._lock:
            if self._pid != os.getpid():  # a forked child: the parent's thread is not here
                self._held, self._loop, self._pid = {}, None, os.getpid()
            if self._loop is None:
                self._connection = connection
                # One warning when Redis goes away and one when it is back, not one a tick.
                outage = OutageLog("concurrency keeper", config, "Could not renew the "
                                   "leases of running concurrency-limited jobs")
                self._loop = TimerLoop("wurk-concurrency-keeper", KEEPER_TICK_S, self.tick,
                                       outage=outage)
                self._loop.start()

    def hold(self, slots: str, jid: str, lease_s: float) -> None:
        with self._lock:
            self._held.setdefault(slots, {})[jid] = lease_s

    def drop(self, slots: str, jid: str) -> None:
        with self._lock:
            held = self._held.get(slots)
            if held is not None:
                held.pop(jid, None)
                if not held:
                    del self._held[slots]

    def tick(self) -> None:
        self.renew()
        sweep(self._connection)

    def renew(self) -> None:
        with self._lock:
            held = {slots: dict(jids) for slots, jids in self._held.items()}
        commands = [SCRIPTS.command("task_concurrency_renew", (slots,),
                                    (max(jids.values()), *jids))
                    for slots, jids in held.items()]
        if commands:
            SCRIPTS.run(self._connection, commands)


def sweep(connection, count: int = SWEEP_BATCH) -> int:
    """Move waiting jobs into free slots for up to `count` waiting lists; the number moved.

    Releases do this as jobs end; the sweep covers slots freed by expired leases (a
    SIGKILLed process) while nothing of that key runs to release them.
    """
    members = connection.read(connection.client.srandmember, keys.CONCURRENCY_WAITING, count)
    pairs = []
    for member in members or ():
        try:
            key, queue = json.loads(member)
        except (TypeError, ValueError):
            continue
        pairs.append((key, queue))
    if not pairs:
        return 0

    def heads():
        pipe = connection.pipeline()
        for key, queue in pairs:
            pipe.lindex(keys.concurrency_waiting(key, queue), 0)
        return pipe.execute()

    commands = []
    for (key, queue), head in zip(pairs, connection.read(heads)):
        spec = _head_spec(head, key)
        commands.append(release_command(spec, keys.concurrency_slots(key), "", queue))
    return sum(int(moved) for moved in SCRIPTS.run(connection, commands))


def _head_spec(head, key: str) -> dict:
    """The limit and lease of a waiting list, from the stamp of its first job."""
    try:
        spec = json.loads(head)[FIELD]
        return {"key": key, "limit": int(spec["limit"]), "lease_s": float(spec["lease_s"])}
    except (TypeError, ValueError, KeyError):
        # Empty (the release script then drops the list from the set) or unreadable.
        return {"key": key, "limit": 0, "lease_s": 1}


KEEPER = Keeper()
HOOKS.add(ClientHook(FIELD, ORDER, prepare))
HOOKS.add(JobHook(FIELD, ORDER, around, task_option=True))
