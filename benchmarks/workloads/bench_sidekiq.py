"""Sidekiq's bench jobs as seen from Python: the probe pushes them with Wurk's client, in
Sidekiq's wire format (class names of sidekiq_jobs.rb, float timestamps as Sidekiq 6
writes them); Ruby's `sidekiq -r sidekiq_jobs.rb` runs them."""

import bench_shapes as shapes

from wurk_django.core import Client, Config

NAME = "sidekiq"
CLASSES = {"noop": "NoopJob", "io": "IoJob", "cpu": "CpuJob"}
BULK = 1_000

_client: Client | None = None


def setup() -> None:
    global _client
    _client = Client(Config(redis_url=shapes.redis_url(), timestamp_format="float"))


def version() -> str:
    import subprocess
    return subprocess.run(["ruby", "-e", 'require "sidekiq"; print Sidekiq::VERSION'],
                          capture_output=True, text=True, check=False).stdout


def push_one(shape: str, *args) -> None:
    _client.push({"class": CLASSES[shape], "args": list(args), "queue": shapes.QUEUE})


def push_many(shape: str, count: int) -> None:
    for start in range(0, count, BULK):
        _client.push_bulk({"class": CLASSES[shape], "queue": shapes.QUEUE,
                           "args": [[]] * min(BULK, count - start)})
