"""Queues as lists of pending jobs: size, latency, paging, search by jid, delete and clear."""

from .. import keys
from .base import DEFAULT_PAGE_SIZE, ApiObject, Page, as_bytes, check_paging, text
from .records import JobRecord, enqueued_latency

ITERATION_CHUNK = 100


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
        names = api._read(lambda: [text(n) for n in api.redis.sscan_iter(keys.QUEUES)])
        return [cls(name, api.config) for name in sorted(set(names))]

    @property
    def size(self) -> int:
        return int(self._read(self.redis.llen, self.key))

    @property
    def paused(self) -> bool:
        # Sidekiq OSS never pauses a queue; pausing arrives with the Pro features.
        return False

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

    def delete_by_value(self, raw) -> bool:
        """LREM one copy of this exact payload (wire §2)."""
        removed = int(self._write(self.redis.lrem, self.key, 1, as_bytes(raw)))
        self._removed += removed
        return removed > 0

    def clear(self) -> None:
        """Drop every job and forget the queue, in one MULTI (wire §11)."""
        def build(pipe):
            pipe.unlink(self.key)
            pipe.srem(keys.QUEUES, self.name)

        self._pipelined(build, transaction=True, write=True)
