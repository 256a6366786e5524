"""Shared pieces of the JSON API: paging parameters and envelopes, and the job shape.

Payload text is attacker-controlled; it leaves here only as JSON strings and
numbers, never as markup, and arguments as server-made JSON text.
"""

import json
import math

from ...core.api.records import JobRecord
from ...core.payload import to_epoch_seconds
from ..auth import ApiError

DEFAULT_COUNT = 25
MAX_COUNT = 500
MAX_PAGE = 10**9
PREVIEW_CHARS = 2_000
MESSAGE_CHARS = 10_000
# Fields shown in their own rows; everything else in a payload is "extra".
SHOWN_FIELDS = {"class", "args", "jid", "queue", "created_at", "enqueued_at", "failed_at",
                "retried_at", "retry_count", "retry", "error_class", "error_message",
                "error_backtrace", "tags", "bid", "encrypt", "wrapped", "display_class"}
# Sidekiq's retry options, shown with the retry policy when they have their usual types
# (`backtrace`: true or a line count; `retry_for`: seconds); any other value is "extra".
RETRY_OPTIONS = {"backtrace": (bool, int), "retry_for": (int, float), "retry_queue": (str,),
                 "dead": (bool,)}


def _int_param(value, default: int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


class Paging:
    """`page` (1-based) and `count` clamped to 1..500, plus a sort direction."""

    def __init__(self, request, *, default_count: int = DEFAULT_COUNT,
                 default_sort: str = "asc", sort_param: str = "sort"):
        self.page = min(max(_int_param(request.GET.get("page"), 1), 1), MAX_PAGE)
        self.count = min(max(_int_param(request.GET.get("count"), default_count), 1), MAX_COUNT)
        sort = request.GET.get(sort_param)
        self.sort = sort if sort in ("asc", "desc") else default_sort

    def pages(self, total: int) -> int:
        return max(math.ceil(total / self.count), 1)

    def last_page_if_past_end(self, total: int) -> bool:
        """Clamp `page` to the last page; True when it moved (the caller reads again)."""
        pages = self.pages(total)
        if self.page > pages:
            self.page = pages
            return True
        return False

    def slice(self, items: list) -> list:
        """This page of an in-memory list (search hits, capped), clamping `page` first."""
        self.last_page_if_past_end(len(items))
        start = (self.page - 1) * self.count
        return items[start:start + self.count]

    def envelope(self, items: list, total: int, *, truncated: bool = False, **extra) -> dict:
        return {"items": items, "page": self.page, "count": self.count, "total": total,
                "pages": self.pages(total), "sort": self.sort, "truncated": truncated, **extra}


def result(requested: int, done: int, missing: int = 0, remaining: int = 0, **extra) -> dict:
    """The answer of every mutation."""
    return {"requested": requested, "done": done, "missing": missing, "remaining": remaining,
            **extra}


def body_keys(request, limit: int = MAX_COUNT) -> list[str]:
    keys = request.json.get("keys")
    if not isinstance(keys, list) or not all(isinstance(key, str) for key in keys):
        raise ApiError("invalid_request", 'Send {"keys": [...]} with a list of strings.')
    if len(keys) > limit:
        raise ApiError("invalid_request", f"At most {limit} keys per request.")
    return keys


def epoch_ms(value) -> int | None:
    """A job timestamp (int ms or float seconds) as integer epoch ms."""
    seconds = to_epoch_seconds(value)
    if seconds is None or not math.isfinite(seconds):
        return None
    return int(round(seconds * 1000))


def finite(value) -> float | None:
    return value if isinstance(value, float) and math.isfinite(value) else None


def json_text(value) -> str:
    """Server-made JSON text; integers beyond 2**53 stay exact, unlike in a browser."""
    return json.dumps(value, ensure_ascii=False, default=str)


def preview(value) -> tuple[str, bool]:
    text = json_text(value)
    return (text[:PREVIEW_CHARS], True) if len(text) > PREVIEW_CHARS else (text, False)


def raw_text(record: JobRecord) -> str:
    # surrogateescape: bytes that are not UTF-8 survive the round trip through the
    # browser and back, so LREM/ZREM still match the member byte for byte.
    return record.raw.decode("utf-8", "surrogateescape")


def raw_bytes(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def _text(value, limit: int = MESSAGE_CHARS) -> str | None:
    if value is None:
        return None
    return (value if isinstance(value, str) else json_text(value))[:limit]


def job_row(record: JobRecord, key: str, score: float | None = None) -> dict:
    """One row of a list: enough to show and act on it, args as cut JSON text."""
    args_preview, args_truncated = preview(record.args)
    tags = record.tags
    return {
        "key": key, "jid": _text(record.jid), "class": _text(record.klass),
        "display_class": _text(record.display_class), "queue": _text(record.queue),
        "score": finite(score), "created_at_ms": epoch_ms(record.get("created_at")),
        "enqueued_at_ms": epoch_ms(record.get("enqueued_at")),
        "failed_at_ms": epoch_ms(record.get("failed_at")),
        "retried_at_ms": epoch_ms(record.get("retried_at")),
        "retry_count": record.retry_count, "retry": _retry_option(record.get("retry")),
        "error_class": _text(record.error_class), "error_message": _text(record.error_message),
        "tags": [_text(tag) for tag in tags], "bid": _text(record.bid),
        "encrypted": record.encrypted, "parsed": record.parsed,
        "args_preview": args_preview, "args_truncated": args_truncated,
    }


def job_detail(record: JobRecord, key: str, score: float | None = None) -> dict:
    """A row plus everything else: parsed args, the exact payload, backtrace, extras."""
    detail = job_row(record, key, score)
    backtrace = record.error_backtrace
    unreadable = record.get("error_backtrace") is not None and not backtrace
    options = retry_options(record)
    extra = {} if record.item is None else {
        name: json_text(value) for name, value in sorted(record.item.items())
        if name not in SHOWN_FIELDS and options.get(name) is None}
    detail.update({
        "retry_options": options,
        "args": record.args if record.parsed else None,
        # Shown, not sent back: actions name the job by its key, so an encrypted
        # argument can be shown as "[encrypted data]" here too.
        "raw": record.shown_value if record.encrypted else raw_text(record),
        "backtrace": None if unreadable else backtrace,
        "backtrace_unreadable": unreadable,
        "wrapped": _text(record.get("wrapped")),
        "extra": extra,
        "custom_rows": [],
    })
    return detail


def retry_options(record: JobRecord) -> dict:
    """Each of RETRY_OPTIONS: its value when it has the expected type, else None."""
    options = {}
    for name, types in RETRY_OPTIONS.items():
        value = record.get(name)
        usual = isinstance(value, types) and (bool in types or not isinstance(value, bool))
        options[name] = value if usual and _exact_in_a_browser(value) else None
    return options


def _exact_in_a_browser(value) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return abs(value) < 2**53
    return True


def _retry_option(value):
    if isinstance(value, bool) or (isinstance(value, int) and abs(value) < 2**53):
        return value
    return None if value is None else _text(value)
