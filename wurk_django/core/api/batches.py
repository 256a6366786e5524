"""Batches for the dashboard and ops tools: the `batches` and `dead-batches` indexes paged
newest first by rank in Redis, filtered by tag or description within set limits, one batch
with capped reads of its live sets (a batch of a million jobs costs what a small one
does), and the invalidate and delete actions."""

from dataclasses import dataclass, field

from .. import keys
from ..batch import Batch
from ..batch_status import BatchStatus, decode, parse_callbacks, parse_tags
from ..errors import BatchNotFoundError
from .base import ApiObject, Page, check_paging

ROW_FIELDS = ("description", "total", "pending", "failures", "created_at", "complete",
              "complete_at", "success", "success_at", "death", "death_at", "invalidated",
              "parent_bid", "tags", "callback_queue")
MEMBER_LIMIT = 100       # jids and children listed on a batch's page
SCAN_LIMIT = 10_000      # index entries a description filter looks at
TAG_LIMIT = 10_000       # bids of one tag a tag filter looks at
CHUNK = 500


def _int(value) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def _float(value) -> float | None:
    try:
        return float(value) if value not in (None, "") else None
    except (TypeError, ValueError):
        return None


@dataclass
class BatchRecord:
    """One batch as a list row shows it; `exists` is False for an index entry whose batch
    has expired (the index is trimmed later)."""

    bid: str
    score: float
    fields: dict = field(default_factory=dict)

    exists = property(lambda self: bool(self.fields))
    description = property(lambda self: self.fields.get("description") or None)
    total = property(lambda self: _int(self.fields.get("total")))
    pending = property(lambda self: _int(self.fields.get("pending")))
    failures = property(lambda self: _int(self.fields.get("failures")))
    created_at = property(lambda self: _float(self.fields.get("created_at")))
    complete_at = property(lambda self: _float(self.fields.get("complete_at")))
    success_at = property(lambda self: _float(self.fields.get("success_at")))
    death_at = property(lambda self: _float(self.fields.get("death_at")))
    complete = property(lambda self: self.fields.get("complete") == "1")
    success = property(lambda self: self.fields.get("success") == "1")
    dead = property(lambda self: self.fields.get("death") == "1")
    invalidated = property(lambda self: self.fields.get("invalidated") == "1")
    parent_bid = property(lambda self: self.fields.get("parent_bid") or None)
    tags = property(lambda self: parse_tags(self.fields.get("tags")))
    callback_queue = property(lambda self: self.fields.get("callback_queue") or "default")

    @property
    def done(self) -> int:
        """Jobs that have succeeded (never below 0, even with counts changed by hand)."""
        return max(self.total - self.pending, 0)


@dataclass
class Members:
    """Up to MEMBER_LIMIT members of one of a batch's sets, and how many it has."""

    items: list
    total: int


@dataclass
class BatchDetail:
    record: BatchRecord
    callbacks: list            # [{"event", "target", "options", "fired"}]
    failed: Members
    dead: Members
    live: int
    children: Members          # of BatchRecord
    pending_children: int
    parent: BatchRecord | None


class BatchSet(ApiObject):
    """The batches index (score: creation time), newest first."""

    index = keys.BATCHES

    @property
    def size(self) -> int:
        return int(self._read(self.redis.zcard, self.index))

    def page(self, number: int = 1, page_size: int = 25) -> Page:
        check_paging(number, page_size)
        start = (number - 1) * page_size

        def build(pipe):
            pipe.zcard(self.index)
            pipe.zrange(self.index, start, start + page_size - 1, desc=True, withscores=True)

        total, rows = self._pipelined(build)
        return Page(self.records(rows), int(total), number, page_size)

    def records(self, rows) -> list[BatchRecord]:
        """Records for `(bid, score)` rows, their fields read in one round trip."""
        bids = [(decode(bid), score) for bid, score in rows]
        if not bids:
            return []
        values = self._pipelined(lambda pipe: [pipe.hmget(keys.batch(bid), ROW_FIELDS)
                                               for bid, _ in bids])
        records = []
        for (bid, score), found in zip(bids, values):
            fields = {name: decode(value) for name, value in zip(ROW_FIELDS, found)
                      if value is not None}
            records.append(BatchRecord(bid, float(score), fields))
        return records

    def filtered(self, *, tag: str | None = None, text: str | None = None, number: int = 1,
                 page_size: int = 25) -> tuple[Page, bool]:
        """A page of the batches with `tag` and/or `text` in their description (case
        aside), newest first; True when a limit stopped the search (the page may then
        leave some out)."""
        check_paging(number, page_size)
        if tag:
            hits, truncated = self._tagged(tag)
            if text:
                hits = [record for record in hits if _matches(record, text)]
        else:
            hits, truncated = self._described(text or "")
        start = (number - 1) * page_size
        return Page(hits[start:start + page_size], len(hits), number, page_size), truncated

    def _tagged(self, tag: str) -> tuple[list[BatchRecord], bool]:
        bids = []
        for bid in self.connection.sscan(keys.batch_tag(tag)):
            bids.append(decode(bid))
            if len(bids) >= TAG_LIMIT:
                break
        truncated = len(bids) >= TAG_LIMIT
        scores = self._read(self.redis.zmscore, self.index, bids) if bids else []
        rows = sorted(((bid, score) for bid, score in zip(bids, scores) if score is not None),
                      key=lambda row: row[1], reverse=True)
        records = []
        for start in range(0, len(rows), CHUNK):
            records += self.records(rows[start:start + CHUNK])
        return [record for record in records if record.exists], truncated

    def _described(self, text: str) -> tuple[list[BatchRecord], bool]:
        hits, seen = [], 0
        while seen < SCAN_LIMIT:
            rows = self._read(self.redis.zrange, self.index, seen, seen + CHUNK - 1,
                              desc=True, withscores=True)
            hits += [record for record in self.records(rows) if _matches(record, text)]
            seen += len(rows)
            if len(rows) < CHUNK:
                return hits, False
        return hits, True

    def fetch(self, bid: str) -> BatchDetail | None:
        """One batch with the first MEMBER_LIMIT of its failing and dead jids and of its
        children, its parent, and its callbacks with whether each event has fired."""
        status = BatchStatus(bid, self.config)
        if not status.exists:
            return None
        record = BatchRecord(bid, status.created_at or 0.0, status.fields)
        counts = self._pipelined(lambda pipe: [
            pipe.scard(keys.batch_part(bid, part))
            for part in ("failed", "died", "jids", "kids", "pkids")])
        failed, dead, live, kids, pending_kids = (int(count) for count in counts)
        children = self.records([(kid, 0.0) for kid in self._members(bid, "kids")])
        parent = None
        if record.parent_bid:
            [parent] = self.records([(record.parent_bid, 0.0)])
        return BatchDetail(
            record=record, callbacks=self._callbacks(status),
            failed=Members(sorted(self._members(bid, "failed")), failed),
            dead=Members(sorted(self._members(bid, "died")), dead),
            live=live, children=Members(children, kids), pending_children=pending_kids,
            parent=parent)

    def _members(self, bid: str, part: str) -> list[str]:
        found = []
        for member in self.connection.sscan(keys.batch_part(bid, part)):
            found.append(decode(member))
            if len(found) >= MEMBER_LIMIT:
                break
        return found

    @staticmethod
    def _callbacks(status: BatchStatus) -> list[dict]:
        return [{"event": event, "target": target, "options": options,
                 "fired": status.fields.get(event) == "1"}
                for event, target, options in parse_callbacks(status.fields.get("callbacks"))]

    def invalidate(self, bid: str) -> int:
        """Invalidate the batch and those below it; 0 when there is no such batch."""
        try:
            return Batch(bid, config=self.config).invalidate_all()
        except BatchNotFoundError:
            return 0

    def delete(self, bid: str) -> bool:
        return BatchStatus(bid, self.config).delete()


class DeadBatchSet(BatchSet):
    """Batches with a dead job (score: when the death happened), newest first."""

    index = keys.DEAD_BATCHES


def _matches(record: BatchRecord, text: str) -> bool:
    return record.exists and text.casefold() in (record.description or "").casefold()
