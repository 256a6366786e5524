"""Wurk's bench tasks: the shared shapes as `@wurk_task` functions, and how to push them."""

import bench_shapes as shapes

from wurk_django.core import Config, set_default_config, wurk_task

NAME = "wurk"


@wurk_task(queue=shapes.QUEUE)
def noop():
    shapes.noop()


@wurk_task(queue=shapes.QUEUE)
def io():
    shapes.io()


@wurk_task(queue=shapes.QUEUE)
def cpu():
    shapes.cpu()


@wurk_task(queue=shapes.QUEUE)
def latency(pushed_at):
    shapes.latency(pushed_at)


TASKS = {"noop": noop, "io": io, "cpu": cpu, "latency": latency}


def setup() -> None:
    set_default_config(Config(redis_url=shapes.redis_url()))


def version() -> str:
    from wurk_django.core.version import VERSION
    return VERSION


def push_one(shape: str, *args) -> None:
    TASKS[shape].perform_async(*args)


def push_many(shape: str, count: int) -> None:
    TASKS[shape].perform_bulk([[]] * count)
