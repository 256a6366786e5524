"""Tasks and a callback for the batches bench (benchmarks/batches.py), loaded into its
worker with --require: a noop job that marks when it returns, and a success callback
that marks when it starts, on CLOCK_MONOTONIC (one clock for every process on Linux)."""

import time

import bench_shapes as shapes

from wurk_django.core import wurk_task

RETURNED_KEY = "bench:batch:returned"
FIRED_KEY = "bench:batch:fired"


@wurk_task(queue=shapes.QUEUE)
def noop():
    shapes.noop()


@wurk_task(queue=shapes.QUEUE)
def last():
    """The batch's job: its return is the moment its ack (and the fire) begins."""
    shapes.client().set(RETURNED_KEY, repr(time.monotonic()))


class Fired:
    def on_success(self, status, options):
        shapes.client().rpush(FIRED_KEY, repr(time.monotonic()))
