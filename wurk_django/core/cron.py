"""Periodic jobs (Sidekiq Enterprise's): loops from `cron_entries` and `@wurk_task(cron=...)`, kept
in Redis, fired by the leader's tick with one atomic claim per occurrence."""

import dataclasses
import hashlib
import importlib.util
import logging
import time
from collections.abc import Callable, Mapping

from . import keys
from .cron_entry import CronEntry, check_entry, entry_label, task_entry
from .cron_schedule import schedule_for
from .errors import ConfigurationError
from .outage import OutageLog
from .payload import dumps, loads
from .redis import REDIS_ERRORS
from .registry import REGISTRY, task_class
from .timer_loop import TimerLoop

logger = logging.getLogger("wurk")

MISSED_TICK_THRESHOLD_S = 90
HISTORY_CAP = 25


def occurrence_jid(lid: str, slot: int) -> str:
    """The jid of one occurrence: the same slot always gets the same jid, so a double
    fire (which the claim prevents) would show up as one jid twice."""
    return hashlib.sha1(f"{lid}|{slot}".encode()).hexdigest()[:24]


def resolve_task(task, where: str) -> str:
    """The wire class name for a task object, a task's import path or wire name, or a
    class this process does not define (a Ruby class, say): kept as given."""
    found = task_class(task)
    if found is not None:
        return found.wire_name
    if not isinstance(task, str) or not task.strip():
        raise ConfigurationError(f"{where}: 'task' must name a task, got {task!r}")
    try:
        found = REGISTRY.find(task)
    except Exception as exc:  # the module exists but fails to import
        raise ConfigurationError(f"{where}: importing {task!r} failed: "
                                 f"{type(exc).__name__}: {exc}") from exc
    if found is not None:
        return found.wire_name
    if "." in task and importlib.util.find_spec(task.split(".")[0]) is not None:
        # Our own package, so a typo rather than a class another process defines.
        raise ConfigurationError(f"{where}: no task named {task!r} (check the import path)")
    return task


def entry_from_setting(raw: Mapping, where: str, default_tz: str = "") -> CronEntry:
    """Check one `cron_entries` item, its task resolved to a wire name."""
    entry = check_entry(raw, where, default_tz)
    return dataclasses.replace(entry, klass=resolve_task(raw.get("task"), where))


def task_entries(default_tz: str = "") -> list[CronEntry]:
    """Entries of tasks declared with `@wurk_task(cron=...)`; raises on the first bad one."""
    entries, problems = _task_entries(default_tz)
    if problems:
        raise problems[0]
    return entries


def _task_entries(default_tz: str) -> tuple[list[CronEntry], list[ConfigurationError]]:
    entries, problems = [], []
    for name in REGISTRY.names():
        cron = getattr(REGISTRY.find(name), "cron_options", None)
        if cron:
            try:
                entries.append(task_entry(name, cron, default_tz))
            except ConfigurationError as exc:
                problems.append(exc)
    return entries, problems


def entry_problems(config) -> list[ConfigurationError]:
    """Every reason `configured_entries(config)` would refuse, for the system checks."""
    return _collect(config)[1]


def configured_entries(config) -> list[CronEntry]:
    """Every loop this process registers: `config.cron_entries`, then cron tasks.

    Raises:
        ConfigurationError: an entry is invalid; the message names it.
    """
    entries, problems = _collect(config)
    if problems:
        raise problems[0]
    return list({entry.lid: entry for entry in entries}.values())


def _collect(config) -> tuple[list[CronEntry], list[ConfigurationError]]:
    entries, problems = [], []
    for index, raw in enumerate(config.cron_entries):
        try:
            entries.append(entry_from_setting(raw, entry_label(index, raw), config.cron_tz))
        except ConfigurationError as exc:
            problems.append(ConfigurationError(str(exc), field="cron_entries"))
    tasks, task_problems = _task_entries(config.cron_tz)
    return entries + tasks, problems + task_problems


# --- registration -----------------------------------------------------------------

def register(connection, entries: list[CronEntry]) -> None:
    """Write the loops; marks and a loop's paused state (once set) are kept."""
    if not entries:
        return
    pipe = connection.pipeline(transaction=True)
    for entry in entries:
        key = keys.loop(entry.lid)
        pipe.sadd(keys.PERIODIC, entry.lid)
        pipe.hset(key, mapping={"schedule": entry.schedule, "klass": entry.klass,
                                "options": dumps(entry.options).decode(), "tz": entry.tz})
        # Only the initial value: a pause from the dashboard survives redeploys.
        pipe.hsetnx(key, "paused", "1" if entry.paused else "0")
    pipe.execute()


def unregister(connection, lid: str) -> bool:
    """Remove a loop and its history; True if it existed."""
    pipe = connection.pipeline(transaction=True)
    pipe.srem(keys.PERIODIC, lid)
    pipe.delete(keys.loop(lid), keys.loop_history(lid))
    return bool(pipe.execute()[0])


def sync(connection, entries: list[CronEntry]) -> list[str]:
    """Make the stored loops exactly `entries`: register them, remove every other loop
    with its history. Returns the removed lids."""
    register(connection, entries)
    wanted = {entry.lid for entry in entries}
    stored = {m.decode() for m in connection.read(connection.client.smembers,
                                                  keys.PERIODIC)}
    stale = sorted(stored - wanted)
    for lid in stale:
        unregister(connection, lid)
        logger.info("[cron] removed loop %s: it is no longer configured", lid)
    return stale


def record_history(connection, lid: str, fired_at: int, jid: str) -> None:
    pipe = connection.pipeline(transaction=True)
    pipe.lpush(keys.loop_history(lid), dumps([fired_at, jid]))
    pipe.ltrim(keys.loop_history(lid), 0, HISTORY_CAP - 1)
    pipe.execute()


def push_item(lid: str, klass: str | None, options: Mapping,
              jid: str | None = None) -> dict:
    """The job a loop pushes: its class and args; its queue and retry override the task's."""
    args = options.get("args", [])
    item = {"class": klass, "args": args if isinstance(args, list) else [args],
            "transactional": False}
    for option in ("queue", "retry"):
        if options.get(option) is not None:
            item[option] = options[option]
    if jid is not None:
        item["jid"] = jid
    return item


# --- the tick ---------------------------------------------------------------------

class CronDriver:
    """Every process runs the tick thread; only the leader's ticks read any loop.

    Each due occurrence is claimed with the `cron_claim` script before anything is
    pushed, so two processes that both believe they lead never push the same slot.
    """

    def __init__(self, config, connection, client, is_leader: Callable[[], bool],
                 entries: list[CronEntry] | None = None):
        self.config = config
        self.connection = connection
        self.client = client
        self.is_leader = is_leader
        self.entries = configured_entries(config) if entries is None else entries
        self._outage = OutageLog("cron", config)
        self._loop = TimerLoop("wurk-cron", config.cron_tick_s, self.tick,
                               on_error=self._report, outage=self._outage)

    def start(self, *, register_loops: bool = True) -> bool:
        """Register this process's loops (idempotent) and start ticking."""
        if register_loops:
            try:
                register(self.connection, self.entries)
            except Exception as exc:  # noqa: BLE001 - the leader's sync writes them too
                self._report(exc)
        return self._loop.start()

    def stop(self, timeout_s: float | None = None) -> bool:
        """Stop ticking; False if a tick would not end in time (then not restartable)."""
        return self._loop.stop(timeout_s)

    @property
    def running(self) -> bool:
        return self._loop.running

    def sync(self) -> None:
        """Leader only: make Redis hold exactly the configured loops."""
        sync(self.connection, self.entries)

    def tick(self) -> None:
        if not self.is_leader():
            return
        now = int(time.time())
        connection = self.connection
        lids = sorted(m.decode() for m in connection.read(connection.client.smembers,
                                                          keys.PERIODIC))
        for lid in lids:
            try:
                self.run_loop(lid, now)
            except REDIS_ERRORS:
                raise  # every other loop would fail the same way: one outage report
            except Exception as exc:  # noqa: BLE001 - one failing loop must not starve the rest
                self.config.handle_exception(exc, {"context": f"cron loop {lid}"})

    def run_loop(self, lid: str, now: int) -> int:
        """Fire every occurrence of one loop that is due at `now`; the number pushed.

        Occurrences more than 90 s late are skipped with a warning, never backfilled;
        later ones fire in order, each claimed on its own.
        """
        fields = self.connection.read(self.connection.client.hmget, keys.loop(lid), "schedule",
                                      "tz", "paused", "klass", "options", "lf", "nf")
        expression, tz, paused, klass, options, lf, nf = (
            None if v is None else v.decode() for v in fields)
        if not expression or paused == "1":
            return 0
        schedule = schedule_for(expression, tz)
        slot: int | None
        if nf:
            slot, token = int(nf), nf
        else:
            # A new loop may fire on its first tick if it matched within the last tick.
            slot = schedule.next_after(int(lf) if lf else now - self.config.cron_tick_s)
            token = None if slot is None else str(slot)
        pushed = 0
        while slot is not None and slot <= now:
            late = now - slot > MISSED_TICK_THRESHOLD_S
            future = schedule.next_after(now - MISSED_TICK_THRESHOLD_S - 1 if late else slot)
            if not self.claim(lid, token, now, future):
                return pushed  # another poller owns this occurrence
            if late:
                logger.warning("[cron] missed tick lid=%s klass=%s expected_at=%d fired_at=%d "
                               "drift=%ds; skipped, as is every occurrence before %d",
                               lid, klass, slot, now, now - slot,
                               now - MISSED_TICK_THRESHOLD_S)
            else:
                self.push(lid, klass, loop_options(options), slot, now)
                pushed += 1
            slot, token = future, None if future is None else str(future)
        return pushed

    def claim(self, lid: str, token: str, now: int, future: int | None) -> bool:
        """Move the loop's marks from `token` to `future` if nobody did; True if we did."""
        claimed = self.connection.script("cron_claim")(
            keys=[keys.loop(lid)], args=[token, str(now), "" if future is None else str(future)])
        return bool(claimed)

    def push(self, lid: str, klass: str | None, options: dict, slot: int,
             now: int) -> str | None:
        try:
            jid = self.client.push(push_item(lid, klass, options, occurrence_jid(lid, slot)))
        except Exception as exc:
            # Lost on purpose: a missed run is tolerable, a duplicate is not.
            logger.warning("[cron] fire lost lid=%s klass=%s mark already advanced, occurrence "
                           "skipped: %s: %s", lid, klass, type(exc).__name__, exc)
            raise
        if jid is not None:
            record_history(self.connection, lid, now, jid)
        return jid

    def _report(self, exc: BaseException) -> None:
        self.config.handle_exception(exc, {"context": "cron"})


def loop_options(raw: str | None) -> dict:
    """A loop hash's `options` JSON as a dict; {} if missing or not a JSON object."""
    try:
        options = loads(raw) if raw else {}
    except ValueError:
        return {}
    return options if isinstance(options, dict) else {}


def next_fire_at(expression: str, tz: str | None, after: float) -> int | None:
    """The next fire time of an expression after epoch `after` (None: never again)."""
    return schedule_for(expression, tz).next_after(after)

