"""Rate limiters as stored in Redis: list (filtered, paged), read one with its state and
metrics, reset one, sweep the list; for the dashboard and ops tools.

A limiter is rebuilt from its meta hash (`lmtr:<name>`) for display only: nothing here
registers a limiter or touches its state except `reset`.
"""

import json
import math
from dataclasses import dataclass, field

from .. import keys
from ..limiter_algorithms import (
    ALGORITHMS,
    METRIC_FIELDS,
    SCRIPTS,
    Algorithm,
    read_statuses,
    sweep_command,
)
from .base import CHUNK_SIZE, ApiObject, Page, check_paging, text

TYPES = tuple(ALGORITHMS)
SWEEP_CHUNK = 200


@dataclass
class LimiterRecord:
    """One limiter: what its meta says and, when read with them, its state and metrics."""

    name: str
    type: str
    options: dict
    used: float | None = None
    limit: float | None = None
    available: float | None = None
    reset_at: float | None = None
    metrics: dict = field(default_factory=dict)
    ttl_s: int | None = None

    @property
    def known(self) -> bool:
        """True when Wurk knows this type (a Ruby process may write others)."""
        return self.type in ALGORITHMS


def algorithm_for(record: LimiterRecord) -> Algorithm | None:
    """The algorithm to read the limiter's state with, or None if its options cannot say
    (an unknown type, or options another version of Sidekiq wrote differently)."""
    cls = ALGORITHMS.get(record.type)
    if cls is None:
        return None
    algorithm = cls(record.name, record.options)
    try:
        probe = {"concurrent": ("size",), "bucket": ("count", "interval"),
                 "window": ("count", "interval"), "leaky": ("size", "drain"),
                 "points": ("capacity", "refill")}[record.type]
        if not all(isinstance(record.options.get(k), (int, float)) and record.options[k] > 0
                   for k in probe):
            return None
    except (TypeError, KeyError):
        return None
    return algorithm


def _options(raw) -> dict:
    try:
        options = json.loads(text(raw) or "{}")
    except ValueError:
        return {}
    return options if isinstance(options, dict) else {}


class LimiterSet(ApiObject):
    """Every limiter named in `lmtr-list` whose meta still exists."""

    def names(self) -> list[str]:
        return self._set_members(keys.LIMITER_LIST)

    def records(self, *, query: str = "", type_: str | None = None) -> list[LimiterRecord]:
        """Limiters sorted by name, filtered by a name substring and a type (meta only)."""
        needle = query.lower()
        names = [name for name in self.names() if needle in name.lower()]
        found = []
        for start in range(0, len(names), CHUNK_SIZE):
            chunk = names[start:start + CHUNK_SIZE]

            def build(pipe, chunk=chunk):
                for name in chunk:
                    pipe.hmget(keys.limiter(name), "type", "options")

            for name, reply in zip(chunk, self._pipelined(build, partial=True)):
                if isinstance(reply, Exception) or reply[0] is None:
                    continue  # meta of another type, or expired (a later sweep drops it)
                record = LimiterRecord(name, text(reply[0]) or "", _options(reply[1]))
                if type_ is None or record.type == type_:
                    found.append(record)
        return found

    def page(self, number: int = 1, page_size: int = 25, *, query: str = "",
             type_: str | None = None) -> Page:
        """One page of limiters, each with its current use against its limit."""
        check_paging(number, page_size)
        records = self.records(query=query, type_=type_)
        pages = max(math.ceil(len(records) / page_size), 1)
        number = min(number, pages)
        entries = records[(number - 1) * page_size:number * page_size]
        self._read_state(entries)
        return Page(entries, len(records), number, page_size)

    def fetch(self, name: str) -> LimiterRecord | None:
        """One limiter with its state, metrics and the meta's remaining life; None if its
        meta is gone. Reading never registers it."""
        def build(pipe):
            pipe.hmget(keys.limiter(name), "type", "options")
            pipe.ttl(keys.limiter(name))

        (kind, options), ttl = self._pipelined(build)
        if kind is None:
            return None
        record = LimiterRecord(name, text(kind) or "", _options(options),
                               ttl_s=ttl if isinstance(ttl, int) and ttl >= 0 else None)
        self._read_state([record])
        return record

    def _read_state(self, records: list[LimiterRecord]) -> None:
        """Fill in state and metrics: two round trips for all the readable ones."""
        readable = []
        for record in records:
            algorithm = algorithm_for(record)
            if algorithm is None:
                record.metrics = self._metrics(record.name)
            else:
                readable.append((record, algorithm))
        if not readable:
            return
        statuses = read_statuses(self.connection, [a for _, a in readable])
        for (record, _), status in zip(readable, statuses):
            record.used, record.limit = status["used"], status["limit"]
            record.available, record.reset_at = status["available"], status["reset_at"]
            record.metrics = status["metrics"]

    def _metrics(self, name: str) -> dict:
        stats = self._read(self.redis.hgetall, keys.limiter_stats(name)) or {}
        values = {text(k): text(v) for k, v in stats.items()}
        return {f: _count(values.get(f)) for f in METRIC_FIELDS}

    def reset(self, name: str) -> bool:
        """Forget a limiter's state and counters (current holders lose their slots); False
        when no limiter has that name."""
        record = self.fetch(name)
        if record is None:
            return False
        algorithm = algorithm_for(record)
        seconds, micros = self._read(self.redis.time)
        doomed = [keys.limiter_stats(name)]
        if algorithm is not None:
            doomed += algorithm.state_keys(seconds + micros / 1_000_000)
        self._write(self.connection.execute_batch, [("DEL", *doomed)])
        return True

    def sweep(self) -> int:
        """Drop names whose meta expired from the list; how many were dropped."""
        names = self.names()
        removed = 0
        for start in range(0, len(names), SWEEP_CHUNK):
            command = sweep_command(names[start:start + SWEEP_CHUNK])
            removed += int(SCRIPTS.run(self.connection, [command])[0])
        return removed


def _count(value):
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0
    if not math.isfinite(number):
        return 0
    return int(number) if number.is_integer() else number
