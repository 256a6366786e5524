"""`sets/<retries|scheduled|dead>`: paging, search and filters, detail, row, bulk and
"all" actions.

Rows are keyed `<score>-<jid>` (Sidekiq's format, split at the first `-`); a row is
found again with ZRANGE BYSCORE at that exact score plus the jid. Every move ZREMs
the exact member first and acts only if that removed it, so two operators clicking
at once never push a job twice.
"""

import math
import time
from typing import Any

from ...core.api import DeadSet, RetrySet, ScheduledSet
from ..auth import ApiError, endpoint
from .common import MAX_COUNT, Paging, body_keys, job_detail, job_row, result

SET_ACTIONS: dict[str, dict[str, Any]] = {
    "retries": {"class": RetrySet, "sort": "asc", "row": {"retry", "kill", "delete"},
                "all": {"retry", "kill", "delete"}},
    "scheduled": {"class": ScheduledSet, "sort": "asc", "row": {"add_to_queue", "delete"},
                  "all": {"add_to_queue", "delete"}},
    "dead": {"class": DeadSet, "sort": "desc", "row": {"retry", "delete"},
             "all": {"retry", "delete"}},
}
ALIASES = {"enqueue": "add_to_queue"}  # the scheduled page's "Enqueue now"
CONFIRM_TOLERANCE = 0.10
ALL_BUDGET_S = 20.0  # one request moves what it can in this time; the UI repeats
ALL_CHUNK = 500


def row_key(entry) -> str:
    return f"{entry.score!r}-{'' if entry.jid is None else entry.jid}"


def find_entry(job_set, key: str):
    """The entry behind a row key, or None if it is malformed or left the set."""
    score_text, dash, jid = key.partition("-")
    try:
        score = float(score_text)
    except ValueError:
        return None
    if not dash or not math.isfinite(score):
        return None
    for entry in job_set.fetch(score):
        if ("" if entry.jid is None else str(entry.jid)) == jid:
            return entry
    return None


def _matches(entry, klass, queue, error_class) -> bool:
    return ((not klass or klass in (entry.klass, entry.display_class))
            and (not queue or entry.queue == queue)
            and (not error_class or entry.error_class == error_class))


def listing(request, set_name: str):
    spec = SET_ACTIONS[set_name]
    job_set = spec["class"]()
    paging = Paging(request, default_sort=spec["sort"])
    needle = request.GET.get("q", "").strip()
    filters = [request.GET.get(name, "").strip() for name in ("class", "queue", "error_class")]
    if needle or any(filters):
        # ZSCAN for the search text, or for the first filter value (every field filter
        # value also appears in the payload text), then exact field filters.
        found = job_set.search(needle or next(value for value in filters if value))
        hits = [entry for entry in found if _matches(entry, *filters)]
        if paging.sort == "desc":
            hits.reverse()
        rows, total, truncated = paging.slice(hits), len(hits), found.truncated
    else:
        page = job_set.page(paging.page, paging.count, reverse=paging.sort == "desc")
        if paging.last_page_if_past_end(page.total):
            page = job_set.page(paging.page, paging.count, reverse=paging.sort == "desc")
        rows, total, truncated = page.entries, page.total, False
    items = [job_row(entry, row_key(entry), entry.score) for entry in rows]
    return paging.envelope(items, total, truncated=truncated, set=set_name)


def detail(request, set_name: str, key: str):
    entry = find_entry(SET_ACTIONS[set_name]["class"](), key)
    if entry is None:
        raise ApiError("not_found", "This job is no longer in the set.")
    return job_detail(entry, key, entry.score)


def _act(entry, action: str) -> bool:
    """Apply one action; False when the entry vanished meanwhile."""
    if action == "delete":
        return entry.delete()
    if action == "kill":
        return entry.kill()
    try:
        jid = entry.retry() if action == "retry" else entry.add_to_queue()
    except ValueError as exc:  # the payload is not a job: it can only be deleted or killed
        raise ApiError("conflict", str(exc)) from None
    return jid is not None


def row_action(request, set_name: str, key: str, action: str = "delete"):
    entry = find_entry(SET_ACTIONS[set_name]["class"](), key)
    if entry is None:
        return result(1, 0, missing=1)
    done = _act(entry, ALIASES.get(action, action))
    return result(1, int(done), missing=int(not done))


def bulk(request, set_name: str):
    """POST sets/<set>/bulk {"action", "keys"}: the action on each listed row."""
    spec = SET_ACTIONS[set_name]
    action = request.json.get("action")
    action = ALIASES.get(action, action) if isinstance(action, str) else None
    if action is None or action not in spec["row"]:
        raise ApiError("invalid_request", f"action must be one of {sorted(spec['row'])}.")
    keys = body_keys(request, MAX_COUNT)
    job_set = spec["class"]()
    done = missing = skipped = 0
    for key in keys:
        entry = find_entry(job_set, key)
        if entry is None:
            missing += 1
            continue
        try:
            moved = _act(entry, action)
        except ApiError:
            skipped += 1
            continue
        done, missing = done + moved, missing + (not moved)
    return result(len(keys), done, missing=missing, skipped=skipped)


def all_action(action: str):
    def handler(request, set_name: str):
        """POST sets/<set>/all/<action> {"confirm_total": n}, n within ±10 % of the size."""
        job_set = SET_ACTIONS[set_name]["class"]()
        confirm = request.json.get("confirm_total")
        if isinstance(confirm, bool) or not isinstance(confirm, int) or confirm < 0:
            raise ApiError("invalid_request", "confirm_total must be the count you confirmed.")
        size = job_set.size
        if abs(confirm - size) > CONFIRM_TOLERANCE * size:
            raise ApiError("conflict", f"The set now holds {size} jobs, not about {confirm}; "
                           "confirm again.", total=size)
        done = _move_all(job_set, action, size)
        return result(size, done, remaining=job_set.size)
    return handler


def _move_all(job_set, action: str, size: int) -> int:
    """Batches of 500 within a 20 s budget; "delete" UNLINKs the set at once."""
    if action == "delete":
        job_set.clear()
        return size
    move = {"retry": job_set.retry_all, "add_to_queue": job_set.add_all_to_queue,
            "kill": job_set.kill_all}[action]
    deadline, done = time.monotonic() + ALL_BUDGET_S, 0
    while done < size and time.monotonic() < deadline:
        moved = move(limit=min(ALL_CHUNK, size - done))
        if moved == 0:
            break  # only unparseable entries left: they stay for delete or kill
        done += moved
    return done


def _with_aliases(actions: set) -> list[str]:
    return sorted(actions | {alias for alias, action in ALIASES.items() if action in actions})


def _routes() -> list:
    """Literal set names and action names, so anything else is a routing 404."""
    routes = []
    for name, spec in SET_ACTIONS.items():
        base, named = f"sets/{name}", {"set_name": name}
        routes += [(base, endpoint(GET=listing), named),
                   (f"{base}/bulk", endpoint(POST=bulk), named)]
        routes += [(f"{base}/all/{action}", endpoint(POST=all_action(ALIASES.get(action, action))),
                    named) for action in _with_aliases(spec["all"])]
        routes.append((f"{base}/<str:key>", endpoint(GET=detail, DELETE=row_action), named))
        routes += [(f"{base}/<str:key>/{action}", endpoint(POST=row_action),
                    {**named, "action": action}) for action in _with_aliases(spec["row"])]
    return routes


urls = _routes()
