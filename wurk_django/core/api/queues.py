"""Queues as lists of pending jobs: size, latency, paging, search, pause, delete and clear."""

import json
from dataclasses import dataclass

from .. import keys
from ..fetch.base import paused_set_changed
from .base import (
    DEFAULT_PAGE_SIZE,
    ApiObject,
    Page,
    SearchResult,
    WrongTypeError,
    as_bytes,
    check_paging,
)
from .records import JobRecord, enqueued_latency

ITERATION_CHUNK = 100
SEARCH_HIT_LIMIT = 1_000
SEARCH_SCAN_LIMIT = 100_000


class QueueRecord(JobRecord):
    """A job read from `queue:<name>`; it remembers that list so it can delete itself."""

    def __init__(self, raw, queue_api: "Queue"):
        super().__init__(raw, queue_api.name)
        self.parent = queue_api

    def delete(self) -> bool:
        """Remove this exact payload from its queue; False if it was already gone."""
        return self.parent.delete_by_value(self.raw)


class Queue(ApiObject):
    """One `queue:<name>` list. Live data: workers pop from its right end all the time.

    The right end is the fetching end (BRPOP/LMOVE take from there), so page 1 and
    iteration start with the job that runs next.
    """

    def __init__(self, name: str = "default", config=None):
        super().__init__(config)
        if not isinstance(name, str) or not name:
            raise ValueError("a queue name must be a non-empty string")
        self.name = name
        self.key = keys.queue(name)
        self._removed = 0

    def __repr__(self) -> str:
        return f"<Queue {self.name}>"

    @classmethod
    def all(cls, config=None) -> list["Queue"]:
        """Every queue named in the `queues` set, sorted by name."""
        api = ApiObject(config)
        return [cls(name, api.config) for name in api._set_members(keys.QUEUES)]

    @property
    def size(self) -> int:
        return int(self._read(self.redis.llen, self.key))

    @property
    def paused(self) -> bool:
        """True while the queue's name is in the `paused` set; read live."""
        return bool(self._read(self.redis.sismember, keys.PAUSED, self.name))

    def pause(self) -> None:
        """Stop fetchers taking jobs from this queue; jobs already running finish.

        The set holds unprefixed names, as Sidekiq Pro's does. Fetchers in this process
        see the pause before their next fetch (one parked on the queue gives back what
        it takes); those of other processes re-read the set at most every 2 s.
        """
        self._write(self.redis.sadd, keys.PAUSED, self.name)
        paused_set_changed()

    def unpause(self) -> None:
        """Let fetchers take jobs from this queue again, as soon as `pause` stops them."""
        self._write(self.redis.srem, keys.PAUSED, self.name)
        paused_set_changed()

    @classmethod
    def overview(cls, config=None) -> list["QueueSummary"]:
        """Every known queue with size, latency and paused flag, in two round trips.

        A queue whose list key holds another type is listed with size and latency None
        and the problem in `error`, so one bad key costs one row.
        """
        api = ApiObject(config)
        names = api._set_members(keys.QUEUES)

        def build(pipe):
            for name in names:
                pipe.llen(keys.queue(name))
                pipe.lindex(keys.queue(name), -1)
                pipe.sismember(keys.PAUSED, name)

        replies = api._pipelined(build, partial=True) if names else []
        return [_summary(name, *replies[3 * i:3 * i + 3]) for i, name in enumerate(names)]

    @property
    def latency(self) -> float:
        """Seconds since the oldest job (the next one to run) was enqueued."""
        return enqueued_latency(self._read(self.redis.lindex, self.key, -1))

    def jobs(self, number: int = 1, page_size: int = DEFAULT_PAGE_SIZE, *,
             newest_first: bool = False) -> Page:
        """One page of jobs, from the fetching end unless `newest_first`."""
        check_paging(number, page_size)
        first = (number - 1) * page_size
        last = first + page_size - 1
        start, stop = (first, last) if newest_first else (-last - 1, -first - 1)

        def build(pipe):
            pipe.llen(self.key)
            pipe.lrange(self.key, start, stop)

        total, raws = self._pipelined(build)
        if not newest_first:
            raws.reverse()
        return Page([QueueRecord(raw, self) for raw in raws], int(total), number, page_size)

    def __iter__(self):
        """Every job, next-to-run first, read in chunks.

        Deletions made through this object shift the remaining jobs towards the
        fetching end; the offset is corrected by that count so none is skipped.
        """
        seen = 0
        self._removed = 0
        while True:
            offset = seen - self._removed
            raws = self._read(self.redis.lrange, self.key,
                              -offset - ITERATION_CHUNK, -offset - 1)
            if not raws:
                return
            for raw in reversed(raws):
                yield QueueRecord(raw, self)
            seen += len(raws)
            if len(raws) < ITERATION_CHUNK:
                return

    def find_job(self, jid: str) -> QueueRecord | None:
        """Scan the queue for a jid; O(size), meant for operators, not application logic."""
        needle = jid.encode("utf-8")
        for record in self:
            if needle in record.raw and record.jid == jid:
                return record
        return None

    def search(self, needle: str, *, newest_first: bool = True, limit: int = SEARCH_HIT_LIMIT,
               scan_limit: int = SEARCH_SCAN_LIMIT) -> SearchResult:
        """Jobs whose payload contains `needle` (class, jid, argument text), capped.

        Lists have no server-side MATCH, so the list is read in chunks by index (LRANGE)
        and never loaded whole: at most `scan_limit` entries are examined and `limit`
        hits kept; `truncated` says when a cap stopped the walk.
        """
        # Arguments are stored JSON-encoded, so `a"b` sits in Redis as `a\"b`.
        wanted = json.dumps(needle, ensure_ascii=False)[1:-1].encode("utf-8")
        hits: list[QueueRecord] = []
        offset = 0
        while offset < scan_limit:
            count = min(ITERATION_CHUNK, scan_limit - offset)
            start, stop = ((offset, offset + count - 1) if newest_first
                           else (-offset - count, -offset - 1))
            raws = self._read(self.redis.lrange, self.key, start, stop)
            for raw in (raws if newest_first else reversed(raws)):
                if wanted in as_bytes(raw):
                    hits.append(QueueRecord(raw, self))
                    if len(hits) >= limit:
                        return SearchResult(hits, truncated=True)
            offset += len(raws)
            if len(raws) < count:
                return SearchResult(hits)
        return SearchResult(hits, truncated=self.size > scan_limit)

    def delete_by_value(self, raw) -> bool:
        """LREM one copy of this exact payload (LREM matches byte for byte)."""
        removed = int(self._write(self.redis.lrem, self.key, 1, as_bytes(raw)))
        self._removed += removed
        return removed > 0

    def clear(self) -> None:
        """Drop every job and forget the queue, in one MULTI."""
        def build(pipe):
            pipe.unlink(self.key)
            pipe.srem(keys.QUEUES, self.name)

        self._pipelined(build, transaction=True, write=True)


@dataclass
class QueueSummary:
    """One row of the queue list: size, seconds since the oldest job was enqueued, paused;
    size and latency are None, and `error` says why, when the queue's key is unreadable."""

    name: str
    size: int | None
    latency: float | None
    paused: bool
    error: str | None = None


def _summary(name: str, size, oldest, paused) -> QueueSummary:
    if isinstance(paused, WrongTypeError):
        raise paused  # the one `paused` set: every row would be wrong, not one
    problem = next((reply for reply in (size, oldest) if isinstance(reply, WrongTypeError)),
                   None)
    if problem is not None:
        return QueueSummary(name, None, None, bool(paused), str(problem))
    return QueueSummary(name, int(size), enqueued_latency(oldest), bool(paused))
