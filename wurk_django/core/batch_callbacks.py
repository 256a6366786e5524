"""Firing a batch's callbacks, on the worker: `complete` and `success` once the batch has
earned them, then its parent's (children before parents), and `death` the first time one
of its jobs dies, on every batch above it too. Each fire is one Lua script that checks the
conditions, claims the event's marker and pushes the callback jobs together, so an event
fires exactly once however often, and by however many workers, it is evaluated.

A callback runs as an ordinary reliable job (`wurk.batch.CallbackJob`, retried, reclaimed
after a crash). A `complete`/`success` callback job belongs to the parent batch, which
therefore waits for it. A target that cannot be found goes to the dead set at once.
"""

import hashlib
import time
from typing import ClassVar

from . import keys, statsd
from .batch import INDEX_AGE_S, INDEX_CAP
from .batch_push import EMPTY_CLASS
from .batch_redis import batch_keys, call
from .batch_status import DEFAULT_CALLBACK_QUEUE, BatchStatus, decode, parse_callbacks
from .batch_targets import resolve
from .errors import CallbackTargetError
from .payload import dumps
from .redis import REDIS_ERRORS
from .task import KILL, Job

CALLBACK_CLASS = "wurk.batch.CallbackJob"  # Pro's runner name is not public; Wurk's own
MARKER_TTL_S = 30 * 24 * 3600
DEFAULT_LINGER_S = 24 * 3600
REDRIVE_ATTEMPTS = 3
REDRIVE_PAUSE_S = 0.05
STALE_READS = 5  # callbacks added while a fire was being prepared: read them again
_META = ("callbacks", "callback_queue", "callback_class", "parent_bid", "created_at")


def redrive(step):
    """Run an idempotent batch step, again after a short pause if Redis failed (three
    tries): a worker that gives up leaves the job to be retried or reclaimed, which
    re-drives the step from scratch."""
    for attempt in range(1, REDRIVE_ATTEMPTS + 1):
        try:
            return step()
        except REDIS_ERRORS:
            if attempt == REDRIVE_ATTEMPTS:
                raise
            time.sleep(REDRIVE_PAUSE_S * attempt)
    return None


def _meta(connection, bid: str) -> dict | None:
    values = connection.read(connection.client.hmget, keys.batch(bid), _META)
    if values[0] is None:  # every batch has `callbacks`; none means no batch
        return None
    meta = {name: decode(value) if value is not None else "" for name, value in
            zip(_META, values)}
    meta["callback_queue"] = meta["callback_queue"] or DEFAULT_CALLBACK_QUEUE
    return meta


def callback_jobs(bid: str, event: str, meta: dict, config, parent: str | None) -> list:
    """`[(jid, payload)]` of the event's callback jobs. Their jids are derived from the
    batch, event and callback, so the same fire always means the same jobs."""
    entries = [entry for entry in parse_callbacks(meta["callbacks"]) if entry[0] == event]
    clock = config.job_clock()
    jobs = []
    for index, (_, target, options) in enumerate(entries):
        jid = hashlib.sha1(f"{bid}:{event}:{index}:{target}".encode()).hexdigest()[:24]
        job = {"class": CALLBACK_CLASS, "args": [bid, target, event, options],
               "queue": meta["callback_queue"], "retry": True, "jid": jid,
               "created_at": clock, "enqueued_at": clock}
        if parent and event != "death":
            job["bid"] = parent  # the parent waits for its children's callbacks
        jobs.append((jid, dumps(job)))
    return jobs


def _flat(jobs: list) -> list:
    return [part for job in jobs for part in job]


def evaluate(connection, config, bid: str) -> None:
    """Fire `complete`/`success` of `bid` if due, then walk up while each parent has
    nothing live left (it may be due too)."""
    seen = set()
    while bid and bid not in seen:
        seen.add(bid)
        result = _fire(connection, config, bid)
        if result is None:
            return
        parent, (state, _, _, parent_live, parent_pkids, _, _) = result
        if state != 1 or not parent or parent_live != 0 or parent_pkids != 0:
            return
        bid = parent


def _fire(connection, config, bid: str):
    for _ in range(STALE_READS):
        meta = _meta(connection, bid)
        if meta is None:
            return None
        parent = meta["parent_bid"] or None
        queue = meta["callback_queue"]
        complete = callback_jobs(bid, "complete", meta, config, parent)
        success = callback_jobs(bid, "success", meta, config, parent)
        script_keys = [*batch_keys(bid, "jids", "pkids", "skids", "complete", "success"),
                       keys.QUEUES, keys.queue(queue),
                       *batch_keys(bid, "failed", "died", "kids", "death")[1:],
                       *(batch_keys(parent, "jids", "pkids", "skids") if parent
                         else ["", "", "", ""])]
        args = [bid, meta["callbacks"], repr(time.time()), MARKER_TTL_S, queue,
                "1" if parent else "0", DEFAULT_LINGER_S, len(complete), *_flat(complete),
                len(success), *_flat(success)]
        result = call(connection, "batch_fire", script_keys, args)
        if result[0] != -2:
            if result[0] == 1 and result[2] == 1:
                _time_success(config, meta)
            return parent, result
    raise RuntimeError(f"batch {bid}: its callbacks kept changing while it was fired")


def _time_success(config, meta: dict) -> None:
    """Sidekiq Pro's `batch.duration_dist`: seconds from creation to the success fire,
    sent only by the worker whose script fired it (once per batch)."""
    try:
        started = float(meta.get("created_at") or "")
    except ValueError:
        return
    statsd.distribution(config, "batch.duration_dist", time.time() - started)


def fire_death(connection, config, bid: str) -> None:
    """Mark `bid` and every batch above it dead; each fires its `death` callbacks the
    first time only."""
    seen: set[str] = set()
    current: str | None = bid
    while current and current not in seen:
        seen.add(current)
        bid, meta = current, None
        for _ in range(STALE_READS):
            meta = _meta(connection, bid)
            if meta is None:
                return
            now = time.time()
            jobs = callback_jobs(bid, "death", meta, config, None)
            answer = call(connection, "batch_death",
                          [*batch_keys(bid, "death"), keys.DEAD_BATCHES, keys.QUEUES,
                           keys.queue(meta["callback_queue"])],
                          [bid, meta["callbacks"], repr(now), MARKER_TTL_S,
                           meta["callback_queue"], repr(now - INDEX_AGE_S), INDEX_CAP,
                           *(payload for _, payload in jobs)])
            if answer != -2:
                break
        current = meta["parent_bid"] or None if meta is not None else None


def _kill_unresolvable(count, exc, job):
    """A target that cannot be found will not be found by retrying: straight to dead."""
    return KILL if isinstance(exc, CallbackTargetError) else None


class CallbackJob(Job):
    """Runs one batch callback: `target(status, options)` on a fresh instance."""

    wurk_options: ClassVar[dict] = {"name": CALLBACK_CLASS, "retry": True,
                                    "retry_in": _kill_unresolvable}

    def perform(self, bid, target, event, options):
        status = BatchStatus(bid)
        method = resolve(target, event, status.callback_class)
        method(status, options)


class EmptyJob(Job):
    """Fires the callbacks of a batch that has nothing else left to run: its ack does."""

    wurk_options: ClassVar[dict] = {"name": EMPTY_CLASS, "retry": True}

    def perform(self, *args):
        return None
