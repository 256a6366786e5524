"""`queues`: sizes, latency and pause state; one queue's jobs; pause, resume, delete, clear.

Queue names in URLs must match Sidekiq 8's `^[a-z_:.\\-0-9]+$` (case-insensitive);
any other name never reaches a view (404 from routing).
"""

from ...core.api import Queue
from ..auth import endpoint
from .common import Paging, body_keys, job_row, raw_bytes, raw_text, result


def summary_item(summary) -> dict:
    latency = None if summary.latency is None else round(summary.latency, 3)
    return {"name": summary.name, "size": summary.size, "latency": latency,
            "paused": summary.paused, "error": summary.error}


def queues(request):
    items = [summary_item(summary) for summary in Queue.overview()]
    return {"items": items, "total": len(items)}


def one_queue(request, name: str):
    queue = Queue(name)
    return {"name": name, "size": queue.size, "latency": round(queue.latency, 3),
            "paused": queue.paused}


def clear(request, name: str):
    """DELETE queues/<q>: drop every job and forget the queue (one MULTI)."""
    queue = Queue(name)
    size = queue.size
    queue.clear()
    return result(size, size)


def jobs(request, name: str):
    """Newest first by default (`direction=asc`: oldest first); `q` searches, capped."""
    paging = Paging(request, default_sort="desc", sort_param="direction")
    queue = Queue(name)
    newest_first = paging.sort == "desc"
    needle = request.GET.get("q", "").strip()
    if needle:
        found = queue.search(needle, newest_first=newest_first)
        rows, total, truncated = paging.slice(found.entries), len(found), found.truncated
    else:
        page = queue.jobs(paging.page, paging.count, newest_first=newest_first)
        if paging.last_page_if_past_end(page.total):
            page = queue.jobs(paging.page, paging.count, newest_first=newest_first)
        rows, total, truncated = page.entries, page.total, False
    items = []
    for record in rows:
        row = job_row(record, raw_text(record))
        row["raw"] = row["key"]  # LREM needs the exact bytes; the client echoes them
        items.append(row)
    return paging.envelope(items, total, truncated=truncated, direction=paging.sort,
                           queue=name)


def _pause(paused: bool):
    def handler(request, name: str):
        queue = Queue(name)
        if paused:
            queue.pause()
        else:
            queue.unpause()
        return {"name": name, "paused": paused, **result(1, 1)}
    return handler


def delete_jobs(request, name: str):
    """POST queues/<q>/jobs/delete {"keys": [raw, ...]}: LREM one copy of each payload."""
    keys = body_keys(request)
    queue = Queue(name)
    done = sum(1 for key in keys if queue.delete_by_value(raw_bytes(key)))
    return result(len(keys), done, missing=len(keys) - done)


urls = {
    "queues": endpoint(GET=queues),
    "queues/<wurk_queue:name>": endpoint(GET=one_queue, DELETE=clear),
    "queues/<wurk_queue:name>/jobs": endpoint(GET=jobs),
    "queues/<wurk_queue:name>/jobs/delete": endpoint(POST=delete_jobs),
    "queues/<wurk_queue:name>/pause": endpoint(POST=_pause(True)),
    "queues/<wurk_queue:name>/resume": endpoint(POST=_pause(False)),
}
