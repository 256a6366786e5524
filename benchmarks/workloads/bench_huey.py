"""Huey's bench tasks: RedisHuey (blocking pops), results off."""

import bench_shapes as shapes
import huey as huey_package

NAME = "huey"

huey = huey_package.RedisHuey(shapes.QUEUE, url=shapes.redis_url(), results=False)


@huey.task()
def noop():
    shapes.noop()


@huey.task()
def io():
    shapes.io()


@huey.task()
def cpu():
    shapes.cpu()


@huey.task()
def latency(pushed_at):
    shapes.latency(pushed_at)


TASKS = {"noop": noop, "io": io, "cpu": cpu, "latency": latency}


def setup() -> None:
    pass


def version() -> str:
    return huey_package.__version__


def push_one(shape: str, *args) -> None:
    TASKS[shape](*args)
