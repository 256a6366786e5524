"""How jobs join batches: the open block of this thread or task (a context variable), the
push interceptor that collects what is pushed inside it, and the commands that write the
collected jobs at the block's exit; plus jobs carrying a bid outside any block (a dead
job sent back from the dead set), which rejoin their batch through the same scripts."""

import threading
from contextvars import ContextVar
from typing import Any

from . import keys
from .batch_redis import batch_keys, call, script_command, transaction
from .batch_status import decode
from .errors import BatchError
from .features import HOOKS, PROMOTION, ClientHook
from .payload import dumps, encode_error, new_jid
from .redis import connection_for

CHUNK = 1000  # jobs per script call
SCRIPTS = ("batch_create", "batch_push", "batch_schedule", "batch_release")
EMPTY_CLASS = "Sidekiq::Batch::Empty"  # Sidekiq Pro's no-op job for batches with no jobs
_ENCODE_ERRORS = (TypeError, ValueError, RecursionError)

BLOCK: ContextVar["Frame | None"] = ContextVar("wurk_batch_block", default=None)
RUNNING: ContextVar[str | None] = ContextVar("wurk_batch_job", default=None)
_LOOSE: ContextVar[set | None] = ContextVar("wurk_batch_loose", default=None)


class Frame:
    """One open block. The outermost block of a thread or task is the root: it writes, at
    its exit and in one MULTI/EXEC, every batch created inside it (each with a hold the
    same transaction releases), every job pushed inside it, and the release of the holds
    its reopened batches took. A block of a batch already open here (`owner`) collects
    for that one."""

    __slots__ = ("batch", "bid", "collecting", "config", "created", "creating", "discarded",
                 "exited", "hold", "lock", "owner", "parent", "parent_bid", "queued", "root",
                 "scheduled", "testing", "token")

    def __init__(self, batch, bid: str, config, *, parent: "Frame | None" = None,
                 hold: str | None = None, creating: bool = False, testing: bool = False,
                 owner: "Frame | None" = None, parent_bid: str | None = None):
        self.batch, self.bid, self.config = batch, bid, config
        self.hold, self.creating, self.testing, self.owner = hold, creating, testing, owner
        self.parent, self.parent_bid = parent, parent_bid
        self.root: Frame = self if parent is None else parent.root
        self.discarded = False
        self.queued: dict[str, list] = {}  # queue -> [jid, payload, jid, payload...]
        self.scheduled: list = []          # [jid, score, payload...]
        self.lock = threading.Lock()       # asyncio tasks and threads may share a block
        self.token: Any = None
        self.collecting: Any = None
        self.created: list[Frame] = []     # on the root: batches to create, in entry order
        self.exited: list[Frame] = []      # on the root: blocks that exited, in exit order

    @property
    def collector(self) -> "Frame":
        return self.owner or self

    @property
    def alive(self) -> bool:
        """False when this block, or one around it, raised: its jobs are dropped."""
        frame: Frame | None = self
        while frame is not None:
            if frame.discarded:
                return False
            frame = frame.parent
        return True

    def collect(self, jobs: list[dict], config) -> None:
        """Keep the jobs' payloads for the exit. Encoded now, so a job that cannot be
        stored fails at its perform_async, not at the end of the block; `enqueued_at` is
        therefore the time of the call. Scheduled jobs (perform_in/at) wait for the exit
        too: Sidekiq's Batches wiki page has every job made inside the block pushed at
        once at its end, and none if the block raises."""
        enqueued_at = config.job_clock()
        encoded = []
        for job in jobs:
            at = job.pop("at", None)
            if at is None:
                job["enqueued_at"] = enqueued_at
            else:
                job.pop("enqueued_at", None)
            try:
                encoded.append((job["jid"], job["queue"], at, dumps(job)))
            except _ENCODE_ERRORS as exc:
                raise encode_error(job, exc) from None
        with self.lock:
            for jid, queue, at, payload in encoded:
                if at is None:
                    self.queued.setdefault(queue, []).extend((jid, payload))
                else:
                    self.scheduled.extend((jid, repr(float(at)), payload))

    def payloads(self) -> list[bytes]:
        """Every payload the block collected (to undo their client hooks when dropped)."""
        with self.lock:
            queued = [self.queued[queue][i + 1] for queue in self.queued
                      for i in range(0, len(self.queued[queue]), 2)]
            return queued + self.scheduled[2::3]

    def push_commands(self) -> list[tuple]:
        """The script calls that add the collected jobs to the batch and write them; for
        a batch created in the same transaction, guarded by its hold."""
        commands = []
        guard = self.hold if self.creating else ""
        head = batch_keys(self.bid, "jids", "died")
        for queue, flat in self.queued.items():
            for start in range(0, len(flat), 2 * CHUNK):
                commands.append(script_command(
                    "batch_push", [*head, keys.QUEUES, keys.queue(queue)],
                    [guard, queue, *flat[start:start + 2 * CHUNK]]))
        flat = self.scheduled
        for start in range(0, len(flat), 3 * CHUNK):
            commands.append(script_command("batch_schedule", [*head, keys.SCHEDULE],
                                           [guard, *flat[start:start + 3 * CHUNK]]))
        return commands


def empty_job(bid: str, queue: str, config) -> tuple[str, bytes]:
    """A no-op job of the batch in its callback queue, whose run fires the callbacks.
    Retried like any job (Sidekiq Pro's does not retry), so a fire that fails in a Redis
    outage is tried again rather than the no-op job dying and marking the batch dead."""
    jid = new_jid()
    clock = config.job_clock()
    return jid, dumps({"class": EMPTY_CLASS, "args": [], "queue": queue, "retry": True,
                       "jid": jid, "bid": bid, "created_at": clock, "enqueued_at": clock})


def release_command(bid: str, hold: str, queue: str, config) -> tuple:
    empty_jid, empty_payload = empty_job(bid, queue, config)
    return script_command("batch_release",
                          [*batch_keys(bid, "jids", "pkids"), keys.QUEUES, keys.queue(queue)],
                          [hold, empty_jid, empty_payload, queue])


def write(connection, commands: list[tuple], bids) -> list:
    """Send commands in one MULTI/EXEC; clear dead marks if a dead job rejoined."""
    if not commands:
        return []
    results = transaction(connection, commands, SCRIPTS)
    if any(isinstance(result, list) and result[1] > 0 for result in results):
        for bid in bids:
            clear_death_upward(connection, bid)
    return results


def clear_death_upward(connection, bid: str) -> None:
    """A dead job of `bid` was sent back: clear the dead mark of the batch, then of each
    parent that has no other dead job or child left."""
    seen: set[str] = set()
    current: str | None = bid
    while current and current not in seen:
        seen.add(current)
        cleared = call(connection, "batch_clear_death",
                       [*batch_keys(current, "died", "kids"), keys.DEAD_BATCHES], [current])
        if cleared != 1:
            return
        parent = connection.read(connection.client.hget, keys.batch(current), "parent_bid")
        current = decode(parent) if parent else None


# --- the push hooks -----------------------------------------------------------------------

def intercept(jobs: list[dict], config) -> bool:
    """Collect the pushes of an open block (True: the client writes nothing); else write
    the jobs that carry a bid of their own (see `mark_loose`) through the batch scripts."""
    frame = BLOCK.get()
    if frame is None:
        return _write_loose(jobs, config) if _LOOSE.get() else False
    frame = frame.collector
    for job in jobs:
        job["bid"] = frame.bid
    if frame.testing:
        return False  # the testing modes record (or run) them, bid and all
    if config.redis_url != frame.config.redis_url:
        raise BatchError(f"a job for {config.redis_url} was pushed inside the block of batch "
                         f"{frame.bid}, which lives in {frame.config.redis_url}")
    frame.collect(jobs, config)
    return True


def mark_loose(job: dict, client, origin: str) -> dict:
    """A job with a bid pushed outside any block: a dead job sent back from the dead set
    (it must rejoin its batch's live jobs, REVIVAL) or one a caller gave a bid. A promoted
    retry or scheduled job is counted already and goes out as a plain push."""
    if origin != PROMOTION and BLOCK.get() is None and isinstance(job.get("bid"), str):
        loose = _LOOSE.get()
        if loose is None:
            loose = set()
            _LOOSE.set(loose)
        loose.add(job["jid"])
    return job


def _write_loose(jobs: list[dict], config) -> bool:
    loose = _LOOSE.get()
    _LOOSE.set(None)
    if loose is None or not all(job["jid"] in loose for job in jobs):
        return False  # not the push the marks were for (one that failed in between)
    frames: dict[str, Frame] = {}
    for job in jobs:
        frame = frames.get(job["bid"])
        if frame is None:
            frame = frames[job["bid"]] = Frame(None, job["bid"], config)
        frame.collect([job], config)
    write(connection_for(config), [command for frame in frames.values()
                                   for command in frame.push_commands()], frames)
    return True


HOOKS.add_interceptor(intercept, first=True)
HOOKS.add(ClientHook("bid", 10, mark_loose))
