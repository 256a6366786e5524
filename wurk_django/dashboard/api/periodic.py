"""`periodic`: cron loops as the cron engine stored them; pause, resume, run now, all
through the data API's LoopSet, as `manage.py wurk_cron` does.

With no loops registered the list is simply empty; actions on an unknown lid are 404.
"""

import time

from ...core.api import LoopSet
from ..auth import ApiError, endpoint
from .common import json_text, preview, result


def loop_item(loop) -> dict:
    args_preview, args_truncated = preview(loop.args)
    return {
        "lid": loop.lid, "schedule": loop.schedule, "class": loop.klass, "queue": loop.queue,
        "retry": loop.retry if isinstance(loop.retry, (bool, int)) else None,
        "tz": loop.tz or "UTC", "paused": loop.paused,
        "args_preview": args_preview, "args_truncated": args_truncated,
        "options": {name: json_text(value) for name, value in sorted(loop.options.items())},
        "last_fired_at_ms": loop.last_fired_at * 1000 if loop.last_fired_at else None,
        # A paused loop shows no next fire.
        "next_fire_at_ms": loop.upcoming * 1000 if loop.upcoming else None,
    }


def loops(request):
    loop_set = LoopSet()
    items = [loop_item(loop) for loop in loop_set]
    return {"items": items, "total": len(items), "leader": loop_set.leader(),
            "server_time_ms": int(time.time() * 1000), "problems": loop_set.problems}


def one_loop(request, lid: str):
    loop = LoopSet().fetch(lid)
    if loop is None:
        raise ApiError("not_found", f"No periodic job {lid!r}.")
    history = [{"fired_at_ms": fired_at * 1000, "jid": jid} for fired_at, jid in loop.history]
    return {**loop_item(loop), "history": history, "server_time_ms": int(time.time() * 1000)}


def _pause(paused: bool):
    def handler(request, lid: str):
        loop_set = LoopSet()
        if not (loop_set.pause(lid) if paused else loop_set.unpause(lid)):
            raise ApiError("not_found", f"No periodic job {lid!r}.")
        return {"lid": lid, "paused": paused, **result(1, 1)}
    return handler


def run_now(request, lid: str):
    jid = LoopSet().fire(lid)
    if jid is None:
        raise ApiError("not_found", f"No periodic job {lid!r}.")
    return {"lid": lid, "jid": jid, **result(1, 1)}


urls = {
    "periodic": endpoint(GET=loops),
    "periodic/<str:lid>": endpoint(GET=one_loop),
    "periodic/<str:lid>/pause": endpoint(POST=_pause(True)),
    "periodic/<str:lid>/resume": endpoint(POST=_pause(False)),
    "periodic/<str:lid>/run": endpoint(POST=run_now),
}
