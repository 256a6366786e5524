"""Tasks the worker-process tests run. They report through Redis lists the tests read."""

import ctypes
import json
import os
import signal
import threading
import time

import redis

from wurk_django.core import Job, wurk_task

_client = None
_client_lock = threading.Lock()


def results():
    global _client
    if _client is None:
        # Under a lock: threads of a fresh process start their first jobs together, and
        # a second client replacing the first closes the first one's socket as it is
        # dropped, under a job still reading from it (a failed run, a 15 s retry).
        with _client_lock:
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


@wurk_task(retry=False)
def gated_sync(gate):
    """Block its thread until the test pushes to `test:gate:<gate>` (at most 30 s); it
    counts itself among the `async_rendezvous` arrivals first."""
    results().rpush("test:started", json.dumps({"sync": gate}))
    results().incr("test:arrived")
    opened = results().blpop(f"test:gate:{gate}", timeout=30)
    results().rpush("test:results", json.dumps({"sync": gate, "opened": bool(opened)}))


@wurk_task(retry=False)
async def async_rendezvous(value, party):
    """Finish only once `party` of these run at the same time (at most 15 s): proof that
    they run concurrently, whatever the machine's speed."""
    import asyncio
    results().incr("test:arrived")
    deadline = time.monotonic() + 15
    while int(results().get("test:arrived")) < party:
        if time.monotonic() > deadline:
            raise TimeoutError(f"only {results().get('test:arrived')} of {party} arrived")
        await asyncio.sleep(0.01)
    results().rpush("test:results", json.dumps({"async": value,
                                                "thread": threading.current_thread().name}))


# --- for the supervisor and no-job-lost tests -------------------------------------------

_held_memory: list = []


class Tally(Job):
    """Counts runs: every jid in the set `test:jids`, every run in `test:runs` and, as
    "jid pid", in `test:ran`, so distinct jids, duplicate runs and the processes that ran
    them can be told apart. Records at the end of the run, as a real side effect would."""

    wurk_options = {"queue": "default"}

    def perform(self, work_ms=0):
        if work_ms:
            time.sleep(work_ms / 1000)
        pipe = results().pipeline(transaction=False)
        pipe.sadd("test:jids", self.jid)
        pipe.incr("test:runs")
        pipe.rpush("test:ran", f"{self.jid} {os.getpid()}")
        pipe.execute()


class KillsItsWorker(Job):
    """A poison pill: SIGKILLs the process running it, every time."""

    wurk_options = {"queue": "default"}

    def perform(self):
        results().rpush("test:suicides", os.getpid())
        os.kill(os.getpid(), signal.SIGKILL)


@wurk_task
def noop():
    pass


@wurk_task
def record_pid(marker):
    results().rpush("test:pids", json.dumps([marker, os.getpid()]))


@wurk_task
def hold_memory(megabytes):
    """Allocate and keep `megabytes` (touched, so resident) for the life of the process."""
    _held_memory.append(bytearray(megabytes * 1024 * 1024))
    results().rpush("test:hogs", os.getpid())


@wurk_task
def ignore_term_and_sleep(seconds, marker):
    """Make the whole process deaf to SIGTERM, below Python's signal module (which only
    the main thread may use), then outlast any shutdown timeout."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.signal.argtypes = [ctypes.c_int, ctypes.c_void_p]
    libc.signal.restype = ctypes.c_void_p
    libc.signal(signal.SIGTERM, 1)  # SIG_IGN
    results().rpush("test:started", json.dumps([marker, os.getpid()]))
    time.sleep(seconds)


@wurk_task
def sleep_quietly(seconds):
    """Touches no Redis, so it finishes normally while Redis is stopped."""
    time.sleep(seconds)
