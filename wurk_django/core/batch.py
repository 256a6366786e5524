"""`Batch`: jobs grouped so that callbacks run once when all have run (`complete`), all
have succeeded (`success`) or the first has died (`death`). This module is the client
side: creating and reopening batches, the `with batch:` block, callback registration,
cancelling (`invalidate_all`) and taking jobs out (`remove_jobs`).

Nothing is written while blocks are open: the outermost block's exit writes, in one
MULTI/EXEC (core/batch_push.py), every batch created inside it, every job pushed inside
it (`perform_in`/`perform_at` ones too) and the release of its holds, so a child is
counted by its parent before any job of either can run, and a block that raises writes
none of its jobs. A batch reopened by code that is not one of its own jobs is held open
(a sentinel among its live jobs) from the block's entry, so jobs finishing meanwhile
cannot fire its callbacks early. Callbacks are always fired by workers
(core/batch_callbacks.py), never by the pushing process: when a block's exit leaves
nothing to wait for, a no-op job in the callback queue does it.

The current block is a context variable, so each thread and asyncio task sees its own.
In the testing modes (fake, inline) a block touches no Redis: its jobs get its bid and go
to the testing modes, and no callback fires.
"""

import base64
import json
import secrets
import time
from collections.abc import Iterable
from datetime import timedelta
from types import TracebackType
from typing import Any, Self

from . import keys, statsd, testing_modes
from .batch_push import BLOCK, RUNNING, Frame, empty_job, release_command, write
from .batch_redis import batch_keys, call, script_command
from .batch_status import DEFAULT_CALLBACK_QUEUE, BatchStatus, decode
from .batch_targets import check_event, target_name
from .config import Config, get_default_config
from .errors import BatchError, BatchNotFoundError
from .features import COLLECTING, undo_client_hooks
from .payload import loads
from .redis import RedisConnection, connection_for

DEFAULT_EXPIRES_S = 30 * 24 * 3600  # a batch not succeeded by then is dropped
INDEX_AGE_S = 30 * 24 * 3600        # `batches` keeps this much...
INDEX_CAP = 1_000_000               # ... and at most this many
MAX_CALLBACKS = 1000

# A callback target: a class with an `on_<event>` method, or its dotted path (a
# "module.Class#method" path names the method). A callback option of Batch() is a
# target or (target, options).
CallbackTarget = type | str
Callback = CallbackTarget | tuple[CallbackTarget, Any]


def new_bid() -> str:
    """Sidekiq Pro's bid: 10 random bytes, URL-safe base64 without padding (14 chars)."""
    return base64.urlsafe_b64encode(secrets.token_bytes(10)).rstrip(b"=").decode()


def current_bid() -> str | None:
    """The bid of the batch job running in this thread or task, if any."""
    return RUNNING.get()


def seconds(value, name: str) -> int:
    if isinstance(value, timedelta):
        value = value.total_seconds()
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 1:
        raise BatchError(f"{name} must be a positive number of seconds (or a timedelta), "
                         f"got {value!r}")
    return int(value)


def callback_entry(event: str, target: str, options) -> str:
    """One callback as canonical JSON, so equal ones compare equal as text (in Lua too)."""
    try:
        return json.dumps([event, target, {} if options is None else options],
                          sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise BatchError(f"callback options must be JSON (they reach the callback through "
                         f"Redis): {exc}") from None


def class_name(value) -> str | None:
    if value is None or isinstance(value, str):
        return value or None
    if isinstance(value, type):
        return f"{value.__module__}.{value.__qualname__}"
    raise BatchError(f"callback_class must be a class or a dotted path, got {value!r}")


def batch_valid(bid: str, config: Config | None = None) -> bool:
    """False once the batch `bid` is invalidated."""
    connection = connection_for(config or get_default_config())
    value = connection.read(connection.client.hget, keys.batch(bid), "invalidated")
    return value is None or decode(value) != "1"


class Batch:
    """A new batch (`Batch(description=..., on_success=...)`) or an existing one reopened
    (`Batch(bid)`), to add jobs with `with batch:` and callbacks with `batch.on(...)`."""

    def __init__(self, bid: str | None = None, *, description: str | None = None,
                 on_complete: Callback | None = None, on_success: Callback | None = None,
                 on_death: Callback | None = None, callback_queue: str | None = None,
                 callback_class: type | str | None = None, tags: Iterable[str] | None = None,
                 expires_in: float | timedelta | None = None,
                 linger: float | timedelta | None = None, config: Config | None = None) -> None:
        self.config = config or get_default_config()
        self._callbacks: list[str] = []
        self._flushed = False
        self._planned: Frame | None = None  # its block has exited; the outer one writes it
        self.parent_bid: str | None = None
        self.created_at: float | None = None
        self._description: str | None = None
        self._callback_queue: str = DEFAULT_CALLBACK_QUEUE
        self._callback_class: str | None = None
        self._tags: list[str] = []
        self._linger: int | None = None
        self._expires_s = DEFAULT_EXPIRES_S
        if bid is not None:
            given = [name for name, value in (
                ("description", description), ("on_complete", on_complete),
                ("on_success", on_success), ("on_death", on_death),
                ("callback_queue", callback_queue), ("callback_class", callback_class),
                ("tags", tags), ("expires_in", expires_in), ("linger", linger))
                if value is not None]
            if given:
                raise BatchError(f"Batch({bid!r}) reopens an existing batch; "
                                 f"{', '.join(given)} can only be given to a new one")
            self.bid = bid
            self._reopen()
            return
        self.bid = new_bid()
        self.description = description
        self.callback_queue = callback_queue or DEFAULT_CALLBACK_QUEUE
        self.callback_class = callback_class
        self.tags = tags or []
        if expires_in is not None:
            self.expires_in(expires_in)
        if linger is not None:
            self.linger = linger
        for event, spec in (("complete", on_complete), ("success", on_success),
                            ("death", on_death)):
            if spec is not None:
                target, options = spec if isinstance(spec, tuple) else (spec, None)
                self.on(event, target, options)

    def __repr__(self) -> str:
        return f"<Batch {self.bid}{' (not written yet)' if not self._flushed else ''}>"

    @property
    def connection(self) -> RedisConnection:
        return connection_for(self.config)

    @property
    def mutable(self) -> bool:
        """True until the first block writes the batch; its options are fixed after."""
        return not self._flushed

    @classmethod
    def create(cls, bid: str, **options: Any) -> "Batch":
        """A new batch with a bid of your choosing, created at most once: if a batch with
        that bid exists when its block exits (code run a second time), the block's jobs
        are not pushed again. Takes the options a new Batch() takes."""
        if not isinstance(bid, str) or not bid or not all(
                char.isalnum() or char in "-_" for char in bid) or len(bid) > 64:
            raise BatchError(f"a bid is 1-64 letters, digits, '-' or '_', got {bid!r}")
        batch = cls(**options)
        batch.bid = bid
        return batch

    @classmethod
    def current(cls) -> "Batch | None":
        """The batch of the job running here (`with Batch.current():` adds siblings from a
        `@wurk_task` function), or None outside a batch job."""
        bid = RUNNING.get()
        return None if bid is None else cls(bid)

    # --- options, fixed by the first block -------------------------------------------

    def _before_first_block(self, name: str) -> None:
        if self._flushed:
            raise BatchError(f"a batch's {name} is written when its first block opens; "
                             "set it before")

    @property
    def description(self) -> str | None:
        return self._description

    @description.setter
    def description(self, value: str | None) -> None:
        self._before_first_block("description")
        if value is not None and not isinstance(value, str):
            raise BatchError(f"description must be a string, got {value!r}")
        self._description = value

    @property
    def callback_queue(self) -> str:
        return self._callback_queue

    @callback_queue.setter
    def callback_queue(self, value: str) -> None:
        self._before_first_block("callback_queue")
        if not isinstance(value, str) or not value:
            raise BatchError(f"callback_queue must be a queue name, got {value!r}")
        self._callback_queue = value

    @property
    def callback_class(self) -> str | None:
        return self._callback_class

    @callback_class.setter
    def callback_class(self, value: type | str | None) -> None:
        self._before_first_block("callback_class")
        self._callback_class = class_name(value)

    @property
    def tags(self) -> list[str]:
        return list(self._tags)

    @tags.setter
    def tags(self, value: Iterable[str]) -> None:
        self._before_first_block("tags")
        if isinstance(value, str) or not all(isinstance(tag, str) and tag for tag in value):
            raise BatchError(f"tags must be a list of non-empty strings, got {value!r}")
        self._tags = list(value)

    def expires_in(self, value: float | timedelta) -> "Batch":
        """Drop the batch this long after its first block if it has not succeeded by
        then (default 30 days)."""
        self._before_first_block("expires_in")
        self._expires_s = seconds(value, "expires_in")
        return self

    @property
    def linger(self) -> int | None:
        """How long the batch stays after it succeeded (default a day); may change later."""
        return self._linger

    @linger.setter
    def linger(self, value: float | timedelta) -> None:
        value = seconds(value, "linger")
        if self._flushed and not call(self.connection, "batch_set", [keys.batch(self.bid)],
                                      ["linger", value]):
            raise BatchNotFoundError(f"no batch {self.bid}: expired or deleted")
        self._linger = value

    # --- callbacks ---------------------------------------------------------------------

    def on(self, event: str, target: CallbackTarget, options: Any = None) -> "Batch":
        """Call `target` when the batch fires `event` ("complete", "success", "death"),
        with `(status, options)`; `options` goes through JSON. The same callback
        registered twice runs once."""
        check_event(event)
        entry = callback_entry(event, target_name(target, event, self.callback_class),
                               options)
        if not self._flushed:
            if entry not in self._callbacks:
                if len(self._callbacks) >= MAX_CALLBACKS:
                    raise BatchError(f"a batch takes at most {MAX_CALLBACKS} callbacks")
                self._callbacks.append(entry)
            return self
        answer = call(self.connection, "batch_append_callback", [keys.batch(self.bid)],
                      [entry, event, MAX_CALLBACKS])
        if answer == -1:
            raise BatchNotFoundError(f"no batch {self.bid}: expired or deleted")
        if answer == -2:
            raise BatchError(f"batch {self.bid} already has {MAX_CALLBACKS} callbacks")
        if answer == 2:
            raise BatchError(f"batch {self.bid} has already fired {event!r}: a callback added "
                             "now would never run")
        return self

    # --- reading and changing a written batch ------------------------------------------

    @property
    def status(self) -> BatchStatus:
        return BatchStatus(self.bid, self.config)

    def include(self, jid: str) -> bool:
        """True while `jid` is a job of this batch that has neither succeeded nor died."""
        return self.status.include(jid) if self._flushed else False

    @property
    def invalidated(self) -> bool:
        return not batch_valid(self.bid, self.config)

    def valid(self) -> bool:
        """False once the batch is invalidated: its jobs should stop doing work."""
        return batch_valid(self.bid, self.config)

    def invalidate_all(self) -> int:
        """Invalidate this batch and every batch below it: their jobs not yet run are
        skipped (and count as done), running ones can ask `valid_within_batch()`.
        Returns how many batches were marked."""
        connection, marked, todo, seen = self.connection, 0, [self.bid], set()
        while todo:
            bid = todo.pop()
            if bid in seen:
                continue
            seen.add(bid)
            marked += call(connection, "batch_set", [keys.batch(bid)], ["invalidated", "1"])
            kids = connection.read(connection.client.smembers, keys.batch_part(bid, "kids"))
            todo += [decode(kid) for kid in kids]
        return marked

    def remove_jobs(self, *jids: str) -> int:
        """Stop counting these jobs (they still run, uncounted); returns how many were in
        the batch. The batch may complete because of it."""
        if not jids:
            return 0
        empty_jid, empty_payload = empty_job(self.bid, self.callback_queue, self.config)
        removed = call(self.connection, "batch_remove_jobs",
                       [*batch_keys(self.bid, "jids", "failed", "pkids"), keys.QUEUES,
                        keys.queue(self.callback_queue)],
                       [empty_jid, empty_payload, self.callback_queue, *jids])
        if removed == -1:
            raise BatchNotFoundError(f"no batch {self.bid}: expired or deleted")
        return removed

    # --- the block ---------------------------------------------------------------------

    def __enter__(self) -> Self:
        outer = BLOCK.get()
        planned = self._planned if self._planned is not None and self._planned.root is (
            outer.root if outer is not None else None) else None
        if outer is not None and outer.collector.bid == self.bid:
            frame = Frame(self, self.bid, self.config, parent=outer, owner=outer.collector,
                          testing=outer.testing)
        elif planned is not None:  # created by an earlier block of the same outer block
            frame = Frame(self, self.bid, self.config, parent=outer, owner=planned)
        elif testing_modes.active_mode() != testing_modes.DISABLE:
            frame = Frame(self, self.bid, self.config, parent=outer, testing=True)
        elif not self._flushed:
            parent = outer.collector.bid if outer is not None else RUNNING.get()
            frame = Frame(self, self.bid, self.config, parent=outer, creating=True,
                          hold=f"hold:{secrets.token_hex(12)}", parent_bid=parent)
            frame.root.created.append(frame)
            self._planned = frame
        else:
            frame = Frame(self, self.bid, self.config, parent=outer, hold=self._hold())
        frame.token = BLOCK.set(frame)
        frame.collecting = COLLECTING.set(True)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        frame = BLOCK.get()
        if frame is None or frame.batch is not self:
            raise BatchError(f"batch {self.bid}'s block closed out of order (close a block "
                             "in the thread or task that opened it)")
        COLLECTING.reset(frame.collecting)
        BLOCK.reset(frame.token)
        if frame.testing:
            return
        root = frame.root
        if exc_type is not None:
            frame.discarded = True  # a block that raises writes none of its jobs
        root.exited.append(frame)
        if frame is root:
            self._write_root(root)

    def _hold(self) -> str | None:
        """Hold a reopened batch while its block is open, unless the job running here is
        one of its own (that job keeps it open until it is acked)."""
        if RUNNING.get() == self.bid:
            return None
        hold = f"hold:{secrets.token_hex(12)}"
        held = call(self.connection, "batch_hold", batch_keys(self.bid, "jids"), [hold])
        if held == -1:
            raise BatchNotFoundError(f"no batch {self.bid}: expired or deleted")
        return hold

    def _write_root(self, root: Frame) -> None:
        """The outermost exit: create the batches made inside, then push every job of the
        blocks that did not raise, then release every hold, children first; one MULTI."""
        created = [frame for frame in root.created if frame.alive]
        for frame in root.created:
            frame.batch._planned = None
        commands = [frame.batch._create_command(frame) for frame in created]
        commands += [command for frame in root.exited
                     if frame.owner is None and frame.alive for command in frame.push_commands()]
        commands += [release_command(frame.bid, frame.hold, frame.batch.callback_queue,
                                     frame.config)
                     for frame in root.exited
                     if frame.hold and frame.owner is None and (frame.alive or not frame.creating)]
        try:
            results = write(self.connection, commands, [frame.bid for frame in root.exited])
        except Exception as exc:
            if not root.discarded:
                raise
            # Only holds were to be released; the block's own error is the one to see.
            self.config.handle_exception(exc, {"context": f"could not release the holds "
                                                          f"of batch {self.bid}'s block"})
            return
        finally:
            _undo_dropped(root, self.config)
        for frame, answer in zip(created, results):
            frame.batch._created(frame, answer)

    def _create_command(self, frame: Frame) -> tuple:
        # Sidekiq Pro's public docs do not say where it keeps registered callbacks; Wurk
        # keeps them all in one field, `callbacks`, a JSON array of [event, target,
        # options] that the fire script compares before it pushes them.
        now = time.time()
        fields = {"created_at": repr(now), "description": self.description or "",
                  "callback_queue": self.callback_queue,
                  "callback_class": self.callback_class or "",
                  "parent_bid": frame.parent_bid or "", "tags": json.dumps(self._tags),
                  "linger": self._linger or "",
                  "callbacks": "[" + ",".join(self._callbacks) + "]"}
        parent = frame.parent_bid
        parent_keys = (batch_keys(parent, "kids", "pkids", "skids") if parent
                       else ["", "", "", ""])
        script_keys = [*batch_keys(self.bid, "jids"), keys.BATCHES, *parent_keys,
                       *(keys.batch_tag(tag) for tag in self._tags)]
        args = [self.bid, frame.hold, self._expires_s, repr(now), repr(now - INDEX_AGE_S),
                INDEX_CAP, "1" if parent else "0"]
        for name, value in fields.items():
            args += (name, value)
        self.created_at = now
        return script_command("batch_create", script_keys, args)

    def _created(self, frame: Frame, answer: int) -> None:
        if answer == -1:
            raise BatchNotFoundError(f"parent batch {frame.parent_bid} does not exist "
                                     f"(expired or deleted): batch {self.bid} and its jobs "
                                     "were not written")
        # 0: a batch with this bid existed already (a workflow step started twice); its
        # jobs were not pushed again.
        self._flushed, self.parent_bid = True, frame.parent_bid
        if answer == 1:
            statsd.increment(self.config, "batch.created")

    def _reopen(self) -> None:
        self._flushed = True
        if testing_modes.active_mode() != testing_modes.DISABLE:
            return  # the testing modes keep no batches in Redis
        status = BatchStatus(self.bid, self.config)
        if not status.exists:
            raise BatchNotFoundError(f"no batch {self.bid}: never created, expired or deleted")
        self._description, self._callback_queue = status.description, status.callback_queue
        self._callback_class, self._tags = status.callback_class, status.tags
        self._linger = status.linger
        self._callbacks = [callback_entry(*entry) for entry in status.callbacks]
        self.parent_bid, self.created_at = status.parent_bid, status.created_at


def _undo_dropped(root: Frame, config) -> None:
    """Jobs of blocks that raised are never written: hand them back to the client hooks
    that prepared them (a unique lock taken at the push is released)."""
    for frame in root.exited:
        if frame.alive or frame.owner is not None:
            continue
        for payload in frame.payloads():
            undo_client_hooks(loads(payload), config)
