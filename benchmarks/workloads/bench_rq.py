"""RQ's bench jobs: one queue, results not kept (result_ttl=0), bulk with enqueue_many."""

import bench_shapes as shapes
import redis
import rq

NAME = "rq"
_queue: rq.Queue | None = None


def noop():
    shapes.noop()


def io():
    shapes.io()


def cpu():
    shapes.cpu()


def latency(pushed_at):
    shapes.latency(pushed_at)


TASKS = {"noop": noop, "io": io, "cpu": cpu, "latency": latency}


def setup() -> None:
    global _queue
    _queue = rq.Queue(shapes.QUEUE, connection=redis.Redis.from_url(shapes.redis_url()))


def version() -> str:
    return rq.__version__


def push_one(shape: str, *args) -> None:
    _queue.enqueue(TASKS[shape], *args, result_ttl=0)


def push_many(shape: str, count: int) -> None:
    # enqueue_many sends each chunk in one pipeline, as Wurk's perform_bulk does.
    for start in range(0, count, 1000):
        _queue.enqueue_many([rq.Queue.prepare_data(TASKS[shape], result_ttl=0)
                             for _ in range(min(1000, count - start))])
