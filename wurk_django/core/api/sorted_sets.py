"""The `schedule`, `retry` and `dead` sorted sets: paging, search, and moving entries out.

Every move removes the exact stored member with ZREM first and acts only when that
ZREM removed it, so two operators clicking at once never push a job twice.
"""

import json
import logging
from datetime import UTC, datetime

from .. import keys
from ..client import Client
from ..features import REVIVAL
from ..payload import dumps
from ..redis import REDIS_ERRORS
from ..retry import run_death_handlers, send_to_dead
from .base import (
    CHUNK_SIZE,
    DEFAULT_PAGE_SIZE,
    ApiObject,
    Page,
    SearchResult,
    as_bytes,
    check_paging,
    epoch_seconds,
)
from .records import JobRecord

logger = logging.getLogger("wurk")

SCAN_COUNT = 100
SEARCH_HIT_LIMIT = 1_000
SEARCH_SCAN_LIMIT = 100_000
_GLOB_SPECIALS = "\\*?[]"


def glob_escape(text: str) -> str:
    """Make `text` match literally inside a Redis MATCH pattern."""
    return "".join("\\" + char if char in _GLOB_SPECIALS else char for char in text)


def _as_json_text(text: str) -> str:
    # Arguments are stored JSON-encoded, so `a"b` sits in Redis as `a\"b`.
    return json.dumps(text, ensure_ascii=False)[1:-1]


class SortedEntry(JobRecord):
    """A job in one of the sorted sets; `score` is its run, retry or death time."""

    def __init__(self, parent: "JobSet", score, raw):
        super().__init__(raw)
        self.parent = parent
        self.score = float(score)

    @property
    def at(self) -> datetime:
        return datetime.fromtimestamp(self.score, UTC)

    @property
    def key(self) -> str:
        """`<score>-<jid>`, the row key Sidekiq's UI uses; split it at the first `-`."""
        return f"{self.score!r}-{self.jid}"

    def delete(self) -> bool:
        return self.parent.delete_by_value(self.raw)

    def reschedule(self, at) -> None:
        """Move the entry to a new time; does nothing if it has left the set meanwhile."""
        score = epoch_seconds(at)
        # XX: only update an existing member, never resurrect one another user removed.
        self.parent._write(self.parent.redis.zadd, self.parent.name, {self.raw: score}, xx=True)
        self.score = score

    def add_to_queue(self) -> str | None:
        """Push the job to its queue now; the jid, or None if someone else took it first."""
        return self._push(decrement_retry_count=False)

    def retry(self) -> str | None:
        """Push the job now with `retry_count` reduced by one, so a manual retry is free."""
        return self._push(decrement_retry_count=True)

    def kill(self, *, notify_failure: bool = False, exc: BaseException | None = None) -> bool:
        """Move the entry to `dead` (trimmed as every move to `dead` is); False if it was
        already gone."""
        if not self.parent.delete_by_value(self.raw):
            return False
        self.parent._guard_moved(self, lambda: DeadSet(self.parent.config).kill(
            self.raw, notify_failure=notify_failure, exc=exc))
        return True

    def _push(self, decrement_retry_count: bool) -> str | None:
        if self.item is None:
            raise ValueError(f"{self.parent.name} entry is not a valid job and cannot be "
                             f"pushed; delete or kill it instead: {self.value[:200]!r}")
        job = dict(self.item)
        if decrement_retry_count and self.retry_count is not None:
            job["retry_count"] = self.retry_count - 1
        # The entry leaves its set now, so the push must not wait for (or roll back
        # with) the caller's database transaction; the key itself never reaches Redis.
        job["transactional"] = False
        if not self.parent.delete_by_value(self.raw):
            return None
        client = Client(self.parent.config, self.parent.connection)
        return self.parent._guard_moved(self, lambda: client.push(job, origin=REVIVAL))


class JobSet(ApiObject):
    """A sorted set whose members are job payloads and whose scores are epoch seconds."""

    name: str = ""

    def __init__(self, config=None):
        super().__init__(config)
        self._removed = 0

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"

    @property
    def size(self) -> int:
        return int(self._read(self.redis.zcard, self.name))

    def page(self, number: int = 1, page_size: int = DEFAULT_PAGE_SIZE, *,
             reverse: bool = False) -> Page:
        """One page by rank, lowest score first unless `reverse`, and the set's size."""
        check_paging(number, page_size)
        start = (number - 1) * page_size

        def build(pipe):
            pipe.zcard(self.name)
            pipe.zrange(self.name, start, start + page_size - 1, desc=reverse, withscores=True)

        total, rows = self._pipelined(build)
        return Page(self._entries(rows), int(total), number, page_size)

    def __iter__(self):
        """Every entry, lowest score first, read in chunks by rank.

        Removals made through this object shift later ranks down; the offset is
        corrected by that count so iterating and deleting skips nothing.
        """
        seen = 0
        self._removed = 0
        while True:
            offset = seen - self._removed
            rows = self._read(self.redis.zrange, self.name, offset,
                              offset + SCAN_COUNT - 1, withscores=True)
            yield from self._entries(rows)
            seen += len(rows)
            if len(rows) < SCAN_COUNT:
                return

    def scan(self, match: str, count: int = SCAN_COUNT):
        """Yield entries whose payload matches a Redis glob (`*match*` if it has no `*`)."""
        if "*" not in match:
            match = f"*{match}*"
        cursor = None
        while cursor != 0:
            cursor, rows = self._read(self.redis.zscan, self.name, cursor or 0, match, count)
            yield from self._entries(rows)

    def search(self, text: str, *, limit: int = SEARCH_HIT_LIMIT,
               scan_limit: int = SEARCH_SCAN_LIMIT) -> SearchResult:
        """Entries whose payload contains `text` (class, jid, argument...), lowest score first.

        ZSCAN never loads the set at once; at most `limit` hits are kept and about
        `scan_limit` members examined, and `truncated` says when either cap stopped it.
        """
        match = f"*{glob_escape(_as_json_text(text))}*"
        hits: dict[bytes, SortedEntry] = {}
        cursor, scanned = None, 0
        while cursor != 0:
            if len(hits) >= limit or scanned >= scan_limit:
                return SearchResult(self._sorted(hits), truncated=True)
            cursor, rows = self._read(self.redis.zscan, self.name, cursor or 0, match,
                                      SCAN_COUNT)
            scanned += SCAN_COUNT
            # ZSCAN may return a member twice while the set rehashes.
            for entry in self._entries(rows):
                if len(hits) < limit:
                    hits.setdefault(entry.raw, entry)
                else:
                    return SearchResult(self._sorted(hits), truncated=True)
        return SearchResult(self._sorted(hits))

    def fetch(self, score, jid: str | None = None) -> list[SortedEntry]:
        """Entries at exactly `score` (or within a `(low, high)` pair), optionally one jid."""
        low, high = score if isinstance(score, tuple) else (score, score)
        rows = self._read(self.redis.zrange, self.name, low, high, byscore=True,
                          withscores=True)
        return [entry for entry in self._entries(rows) if jid is None or entry.jid == jid]

    def find_job(self, jid: str) -> SortedEntry | None:
        """Scan for a jid; O(size), meant for operators, not application logic."""
        for entry in self.scan(f"*{glob_escape(jid)}*"):
            if entry.jid == jid:
                return entry
        return None

    def delete_by_value(self, raw) -> bool:
        """ZREM this exact member; works for payloads that do not parse as well."""
        removed = int(self._write(self.redis.zrem, self.name, as_bytes(raw)))
        self._removed += removed
        return removed > 0

    def delete_by_jid(self, score, jid: str) -> bool:
        for entry in self.fetch(score, jid):
            if self.delete_by_value(entry.raw):
                return True
        return False

    def clear(self) -> None:
        """UNLINK the whole set at once."""
        self._write(self.redis.unlink, self.name)

    def retry_all(self, limit: int | None = None) -> int:
        """Push every job now with `retry_count` reduced by one; returns how many."""
        return self._move_all(limit, lambda entry: entry.retry() is not None, parsed_only=True)

    def add_all_to_queue(self, limit: int | None = None) -> int:
        """Push every job now, counts untouched; returns how many."""
        return self._move_all(limit, lambda entry: entry.add_to_queue() is not None,
                              parsed_only=True)

    def kill_all(self, limit: int | None = None, *, notify_failure: bool = False,
                 exc: BaseException | None = None) -> int:
        """Move every entry to `dead`, trimming as each one lands; returns how many."""
        return self._move_all(limit, lambda entry: entry.kill(notify_failure=notify_failure,
                                                              exc=exc))

    def delete_all(self, limit: int | None = None) -> int:
        """ZREM entries chunk by chunk (unlike `clear`, a `limit` can bound one call)."""
        return self._move_all(limit, lambda entry: entry.delete())

    def _move_all(self, limit: int | None, act, *, parsed_only: bool = False) -> int:
        """Apply `act` to up to `limit` entries, lowest score first, a chunk at a time.

        The budget is capped by the size at the start, so entries arriving meanwhile
        cannot keep it running forever. Unparseable entries are stepped over when
        `parsed_only`, and stay where they are.
        """
        budget = self.size if limit is None else min(limit, self.size)
        done = skipped = 0
        while budget > 0:
            rows = self._read(self.redis.zrange, self.name, skipped,
                              skipped + min(CHUNK_SIZE, budget) - 1, withscores=True)
            if not rows:
                break
            for entry in self._entries(rows):
                if parsed_only and entry.item is None:
                    skipped += 1
                elif act(entry):
                    done += 1
            budget -= len(rows)
        return done

    def _guard_moved(self, entry: SortedEntry, move):
        """Run the second half of a move; if it fails, put the entry back, then re-raise.

        A duplicate after a half-failed push is better than a lost job.
        """
        try:
            return move()
        except BaseException:
            try:
                self._write(self.redis.zadd, self.name, {entry.raw: entry.score}, nx=True)
                self._removed -= 1
            except REDIS_ERRORS as exc:
                logger.warning("Could not return an entry to %s after a failed move: %s",
                               self.name, exc)
            raise

    def _entries(self, rows) -> list[SortedEntry]:
        return [SortedEntry(self, score, raw) for raw, score in rows]

    @staticmethod
    def _sorted(hits: dict) -> list[SortedEntry]:
        return sorted(hits.values(), key=lambda entry: entry.score)


class ScheduledSet(JobSet):
    name = keys.SCHEDULE

    def schedule(self, at, job: dict) -> SortedEntry:
        """Store a job to run at `at` as-is (no client middleware; prefer Client pushes)."""
        if not isinstance(job, dict):
            raise TypeError("a job must be a dict")
        member = dumps({k: v for k, v in job.items() if k not in ("at", "enqueued_at")})
        score = epoch_seconds(at)
        self._write(self.redis.zadd, self.name, {member: score})
        return SortedEntry(self, score, member)


class RetrySet(JobSet):
    name = keys.RETRY


class DeadSet(JobSet):
    name = keys.DEAD

    def kill(self, raw, *, notify_failure: bool = False,
             exc: BaseException | None = None) -> None:
        """Add a payload to `dead` with the exact trim rule; optionally tell death handlers."""
        record = JobRecord(raw)
        send_to_dead(self.connection, self.config, record.raw)
        if notify_failure and record.item is not None:
            run_death_handlers(self.config, record.item,
                               exc or RuntimeError(f"Job {record.jid} killed by API"))
