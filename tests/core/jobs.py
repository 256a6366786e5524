"""Tasks the worker-process tests run. They report through Redis lists the tests read."""

import json
import os
import time

import redis

from wurk_django.core import Job, wurk_task

_client = None


def results():
    global _client
    if _client is None:
        _client = redis.Redis.from_url(os.environ["REDIS_URL"])
    return _client


@wurk_task
def record(value):
    results().rpush("test:results", json.dumps(value))


@wurk_task(queue="critical")
def record_critical(value):
    results().rpush("test:results", json.dumps(["critical", value]))


@wurk_task
def slow(seconds, marker):
    results().rpush("test:started", marker)
    time.sleep(seconds)
    results().rpush("test:finished", marker)


@wurk_task(retry=3, backtrace=5)
def always_fails(message):
    results().rpush("test:attempts", message)
    raise ValueError(message)


@wurk_task(retry=False)
def fails_without_retry(message):
    raise RuntimeError(message)


class RecordingJob(Job):
    wurk_options = {"queue": "default", "retry": 2}

    def perform(self, value):
        results().rpush("test:results", json.dumps({"class_job": value, "jid": self.jid}))


class HardJob(Job):
    """Shares a wire name with a Ruby class, as a mixed Ruby/Python app would."""

    wurk_options = {"name": "HardJob", "queue": "shared"}

    def perform(self, *args):
        results().rpush("test:results", json.dumps({"HardJob": list(args)}))


@wurk_task
async def async_record(value, delay_s=0.0):
    import asyncio
    import threading
    await asyncio.sleep(delay_s)
    results().rpush("test:results", json.dumps({"async": value,
                                                "thread": threading.current_thread().name}))


@wurk_task
def blocking_sync(seconds):
    time.sleep(seconds)
    results().rpush("test:results", json.dumps({"sync": seconds}))
