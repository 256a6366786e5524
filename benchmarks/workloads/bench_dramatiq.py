"""Dramatiq's bench actors: Redis broker, default middleware, no retries."""

import bench_shapes as shapes
import dramatiq
from dramatiq.brokers.redis import RedisBroker

NAME = "dramatiq"

dramatiq.set_broker(RedisBroker(url=shapes.redis_url()))


@dramatiq.actor(queue_name=shapes.QUEUE, max_retries=0)
def noop():
    shapes.noop()


@dramatiq.actor(queue_name=shapes.QUEUE, max_retries=0)
def io():
    shapes.io()


@dramatiq.actor(queue_name=shapes.QUEUE, max_retries=0)
def cpu():
    shapes.cpu()


@dramatiq.actor(queue_name=shapes.QUEUE, max_retries=0)
def latency(pushed_at):
    shapes.latency(pushed_at)


TASKS = {"noop": noop, "io": io, "cpu": cpu, "latency": latency}


def setup() -> None:
    pass


def version() -> str:
    return dramatiq.__version__


def push_one(shape: str, *args) -> None:
    TASKS[shape].send(*args)
