"""`batches`: the batches list (newest first, filter by tag or description), the dead
batches, one batch with its progress, failures, callbacks, parent and children, and the
invalidate and delete actions, all through the data API's BatchSet; plus the polling
endpoint `batch_status/<bid>.json` (Sidekiq Pro's), answering `BatchStatus.data()`.

Every read is bounded (a page of the index, the first members of a batch's sets), so
the pages cost the same for a thousand batches or a million, and for a batch of a
million jobs.
"""

from django.http import JsonResponse

from ...core.api.batches import BatchSet, DeadBatchSet
from ...core.batch_status import BatchStatus
from ..auth import ApiError, endpoint
from .common import Paging, json_text, result


def _ms(seconds: float | None) -> int | None:
    return None if seconds is None else int(seconds * 1000)


def batch_row(record) -> dict:
    """One batch in a list: counts, progress and state; the description is plain text."""
    return {
        "bid": record.bid, "exists": record.exists, "description": record.description,
        "total": record.total, "pending": record.pending, "failures": record.failures,
        "done": record.done, "created_at_ms": _ms(record.created_at),
        "complete": record.complete, "complete_at_ms": _ms(record.complete_at),
        "success": record.success, "success_at_ms": _ms(record.success_at),
        "dead": record.dead, "death_at_ms": _ms(record.death_at),
        "invalidated": record.invalidated, "parent_bid": record.parent_bid,
        "tags": record.tags, "callback_queue": record.callback_queue,
        "score_ms": _ms(record.score),
    }


def listing(request):
    paging = Paging(request, default_sort="desc")
    tag, text = request.GET.get("tag", "").strip(), request.GET.get("q", "").strip()
    batches = BatchSet()
    if tag or text:
        page, truncated = batches.filtered(tag=tag or None, text=text or None,
                                           number=paging.page, page_size=paging.count)
        if paging.last_page_if_past_end(page.total):
            page, truncated = batches.filtered(tag=tag or None, text=text or None,
                                               number=paging.page, page_size=paging.count)
    else:
        page, truncated = batches.page(paging.page, paging.count), False
        if paging.last_page_if_past_end(page.total):
            page = batches.page(paging.page, paging.count)
    return paging.envelope([batch_row(record) for record in page.entries], page.total,
                           truncated=truncated, tag=tag, q=text)


def dead_listing(request):
    paging = Paging(request, default_sort="desc")
    batches = DeadBatchSet()
    page = batches.page(paging.page, paging.count)
    if paging.last_page_if_past_end(page.total):
        page = batches.page(paging.page, paging.count)
    return paging.envelope([batch_row(record) for record in page.entries], page.total)


def detail(request, bid: str):
    found = BatchSet().fetch(bid)
    if found is None:
        raise ApiError("not_found", f"No batch {bid!r}: it finished and expired, or never "
                                    "existed.")
    return {
        **batch_row(found.record),
        "callback_class": found.record.fields.get("callback_class") or None,
        "linger_s": int(found.record.fields["linger"]) if found.record.fields.get(
            "linger", "").isdigit() else None,
        "callbacks": [{**callback, "options": json_text(callback["options"])}
                      for callback in found.callbacks],
        "live": found.live,
        "failed": {"items": found.failed.items, "total": found.failed.total},
        "dead_jids": {"items": found.dead.items, "total": found.dead.total},
        "children": {"items": [batch_row(child) for child in found.children.items],
                     "total": found.children.total},
        "pending_children": found.pending_children,
        "parent": None if found.parent is None else batch_row(found.parent),
    }


def invalidate(request, bid: str):
    marked = BatchSet().invalidate(bid)
    if not marked:
        raise ApiError("not_found", f"No batch {bid!r}.")
    return {"bid": bid, "invalidated": marked, **result(1, 1)}


def delete(request, bid: str):
    done = BatchSet().delete(bid)
    return {"bid": bid, **result(1, int(done), missing=int(not done))}


def batch_status(request, bid: str):
    """Sidekiq Pro's polling answer for a batch, for pages that show its progress."""
    status = BatchStatus(bid)
    if not status.exists:
        raise ApiError("not_found", f"No batch {bid!r}.")
    return status.data()


def batch_status_view(request, bid: str):
    """The polling endpoint as a plain Django view, without the dashboard's staff check,
    for a project to route behind its own access rules:

        path("batches/<str:bid>.json", login_required(batch_status_view))
    """
    status = BatchStatus(bid)
    if not status.exists:
        return JsonResponse({"bid": bid, "error": "not found"}, status=404)
    return JsonResponse(status.data())


urls = {
    "batches": endpoint(GET=listing),
    "batches/dead": endpoint(GET=dead_listing),
    "batches/<str:bid>": endpoint(GET=detail, DELETE=delete),
    "batches/<str:bid>/invalidate": endpoint(POST=invalidate),
}
# Under the dashboard's mount, beside `api/`: Sidekiq Pro's web UI serves it there too.
status_urls = {"batch_status/<str:bid>.json": endpoint(GET=batch_status)}
