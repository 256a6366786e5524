"""Celery's bench tasks: Redis broker, no result backend, early acks (Celery's default)."""

import bench_shapes as shapes
import celery

NAME = "celery"

app = celery.Celery("bench", broker=shapes.redis_url())
app.conf.update(
    task_ignore_result=True,  # Wurk stores no results either
    task_acks_late=False,  # Celery's default: acked on receipt, before the task runs
    worker_prefetch_multiplier=4,  # Celery's default
    worker_send_task_events=False,
    broker_connection_retry_on_startup=True,
    task_default_queue=shapes.QUEUE,
)


@app.task(name="bench.noop")
def noop():
    shapes.noop()


@app.task(name="bench.io")
def io():
    shapes.io()


@app.task(name="bench.cpu")
def cpu():
    shapes.cpu()


@app.task(name="bench.latency")
def latency(pushed_at):
    shapes.latency(pushed_at)


TASKS = {"noop": noop, "io": io, "cpu": cpu, "latency": latency}


def setup() -> None:
    pass


def version() -> str:
    return celery.__version__


def push_one(shape: str, *args) -> None:
    TASKS[shape].delay(*args)
