"""`processes` (+ quiet/stop one or all) and `work`, the jobs running right now."""

import time

from ...core.api import EmbeddedProcessError, ProcessSet, Workers
from ..auth import ApiError, endpoint
from .common import Paging, epoch_ms, job_row, raw_text

STALE_BEATS = 3  # a beat older than three heartbeats marks a process stale
WORK_PAGE_SIZE = 100


def process_item(process, stale_after_s: float) -> dict:
    beat_age_s = time.time() - process.beat if process.beat else None
    return {
        "identity": process.identity, "hostname": process.hostname, "pid": process.pid,
        "tag": process.tag, "labels": process.labels, "queues": process.queues,
        "weights": process.weights, "capsules": process.capsules,
        "version": process.version, "concurrency": process.concurrency,
        "busy": process.busy, "rss": process.rss, "rtt_us": process.rtt_us,
        "started_at_ms": epoch_ms(process.info.get("started_at")),
        "beat_ms": int(process.beat * 1000) if process.beat else None,
        "quiet": process.is_quiet, "stopping": process.stopping,
        "embedded": process.embedded,
        "stale": beat_age_s is not None and beat_age_s > stale_after_s,
    }


def processes(request):
    process_set = ProcessSet()
    stale_after_s = STALE_BEATS * process_set.config.heartbeat_interval_s
    items = [process_item(p, stale_after_s) for p in process_set]
    threads = sum(item["concurrency"] for item in items)
    busy = sum(item["busy"] for item in items)
    return {
        "items": items, "total": len(items), "processes": len(items), "threads": threads,
        "busy": busy, "utilization": round(100 * busy / threads, 1) if threads else 0.0,
        "rss": sum(item["rss"] for item in items), "problems": process_set.problems,
    }


def _signal_all(action: str):
    def handler(request):
        process_set = ProcessSet()
        targets = sum(1 for process in process_set if not process.embedded)
        done = process_set.quiet_all() if action == "quiet" else process_set.stop_all()
        return {"requested": targets, "done": done, "missing": max(targets - done, 0),
                "remaining": 0}
    return handler


def _signal_one(action: str):
    def handler(request, identity: str):
        # get() checks SISMEMBER processes first: an identity from the URL never names
        # an arbitrary key.
        process = ProcessSet().get(identity)
        if process is None:
            raise ApiError("not_found", f"No live process {identity!r}.")
        try:
            if action == "quiet":
                process.quiet()
            else:
                process.stop()
        except EmbeddedProcessError as exc:
            raise ApiError("conflict", f"{exc}: its host process owns its lifecycle.") from None
        return {"requested": 1, "done": 1, "missing": 0, "remaining": 0}
    return handler


def work(request):
    """Running jobs, oldest start first, filtered by exact queue or class, paged."""
    paging = Paging(request, default_count=WORK_PAGE_SIZE)
    queue, klass = request.GET.get("queue"), request.GET.get("class")
    workers = Workers()
    running = [w for _, _, w in workers
               if (not queue or w.queue == queue)
               and (not klass or klass in (w.job.klass, w.job.display_class))]
    if paging.sort == "desc":
        running.reverse()
    items = []
    for w in paging.slice(running):
        row = job_row(w.job, raw_text(w.job))
        row.update({"identity": w.identity, "tid": w.tid,
                    "run_at_ms": int(w.run_at.timestamp() * 1000) if w.run_at else None})
        items.append(row)
    return paging.envelope(items, len(running), problems=workers.problems)


urls = {
    "processes": endpoint(GET=processes),
    "processes/quiet": endpoint(POST=_signal_all("quiet")),
    "processes/stop": endpoint(POST=_signal_all("stop")),
    "processes/<str:identity>/quiet": endpoint(POST=_signal_one("quiet")),
    "processes/<str:identity>/stop": endpoint(POST=_signal_one("stop")),
    "work": endpoint(GET=work),
}
