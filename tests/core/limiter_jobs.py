"""Tasks the rate-limiter and task-concurrency tests run in real worker processes. They
report through Redis keys the tests read (`lt:*`)."""

import json
import os
import threading
import time

import redis

from wurk_django.core import wurk_task
from wurk_django.core.errors import OverLimit
from wurk_django.core.features import HOOKS, DeathHook, JobHandled, JobHook
from wurk_django.core.limiter import Limiter

_client = None
_client_lock = threading.Lock()

# INCR a counter of calls inside, keep its highest value; one script, so no two callers
# can interleave between the INCR and the max.
ENTER = """
local n = redis.call('INCR', KEYS[1])
if n > tonumber(redis.call('GET', KEYS[2]) or '0') then redis.call('SET', KEYS[2], n) end
return n
"""
# Record Redis's own time: an event the tests order against the limiter's clock.
STAMP = """
local t = redis.call('TIME')
redis.call('RPUSH', KEYS[1], ARGV[1] .. ' ' .. t[1] .. '.' .. string.format('%06d', t[2]))
"""


class TooManyRequests(Exception):
    """What a third-party client library raises on HTTP 429."""


Limiter.configure(errors=[TooManyRequests],
                  backoff=lambda limiter, job, exc: float(os.environ.get("LT_BACKOFF_S", "0.2")))


def client() -> redis.Redis:
    global _client
    if _client is None:
        with _client_lock:
            if _client is None:
                _client = redis.Redis.from_url(os.environ["REDIS_URL"])
    return _client


def stamp(key: str, label: str) -> None:
    client().eval(STAMP, 1, key, label)


def stopped() -> bool:
    return client().exists("lt:stop") == 1


# --- what a batch sees: a job hook on the `outcome_probe` field -----------------------

def _probe(run, proceed):
    """Record each run's outcome as a batch's job hook sees it: ok, handled (JobHandled:
    neither success nor failure) or failed."""
    outcome = "failed"
    try:
        result = proceed()
        outcome = "ok"
        return result
    except JobHandled:
        outcome = "handled"
        raise
    finally:
        client().rpush("lt:outcomes", json.dumps([run.job["jid"], outcome]))


def _probe_died(job, exc, config):
    client().rpush("lt:deaths", json.dumps([job["jid"], type(exc).__name__]))


HOOKS.add(JobHook("outcome_probe", 5, _probe))
HOOKS.add(DeathHook("outcome_probe", _probe_died))


# --- concurrent limiter ------------------------------------------------------------

@wurk_task(retry=0)
def overlap_loop(name: str, size: int):
    """Call within_limit until told to stop; count how many are inside at once."""
    limiter = Limiter.concurrent(name, size, wait_timeout=30, lock_timeout=30)
    r = client()
    r.sadd("lt:pids", os.getpid())

    def inside():
        r.eval(ENTER, 2, "lt:inside", "lt:max")
        time.sleep(0.002)
        r.decr("lt:inside")
        r.incr("lt:calls")

    while not stopped():
        limiter.within_limit(inside)


@wurk_task(retry=0)
def hold_forever(name: str, lock_timeout: float):
    """Take the only slot, say so with the lease's expiry, then wait to be SIGKILLed."""
    limiter = Limiter.concurrent(name, 1, wait_timeout=0, lock_timeout=lock_timeout)
    with limiter.acquire():
        [(_, expiry)] = client().zrange(f"lmtr-cs:{name}", 0, -1, withscores=True)
        client().rpush("lt:holding", json.dumps({"pid": os.getpid(), "expiry": expiry}))
        while True:
            time.sleep(0.05)


# --- bucket, window, leaky, points -------------------------------------------------

LIMITERS = {
    "bucket": lambda: Limiter.bucket("lt-bucket", 12, "second", wait_timeout=30),
    "window": lambda: Limiter.window("lt-window", 12, 1, wait_timeout=30),
    "leaky": lambda: Limiter.leaky("lt-leaky", 6, 1, wait_timeout=30),
    "points": lambda: Limiter.points("lt-points", 12, 12),
}


@wurk_task(retry=0)
def rate_loop(kind: str, until: float):
    """Call as fast as admitted until Redis's clock reaches `until`; record each admission
    at the time the limiter counted it (Redis's clock)."""
    limiter = LIMITERS[kind]()
    r = client()
    while True:
        try:
            with limiter.acquire() as handle:
                if handle.admitted_at >= until:
                    return
                r.rpush(f"lt:admitted:{kind}", repr(handle.admitted_at))
        except OverLimit:
            r.incr(f"lt:refused:{kind}")
            time.sleep(0.01)  # points refuse at once: pace the retries


# --- over-limit reschedules ---------------------------------------------------------

@wurk_task(retry=0)
def limited(n: int):
    """Runs only inside a concurrent limiter of 2 that never waits: most attempts are
    refused and rescheduled (same jid); each job must finish exactly once."""
    limiter = Limiter.concurrent("lt-resched", 2, wait_timeout=0, lock_timeout=30,
                                 reschedule=1000)
    r = client()

    def work():
        time.sleep(0.02)
        r.rpush("lt:done", n)
        r.rpush("lt:done-at", repr(time.time()))

    limiter.within_limit(work)


@wurk_task(retry=5)
def over_cap(n: int):
    """Always over a limit (it asks for a second slot of a mutex it holds); rescheduled
    until the cap, then dead."""
    limiter = Limiter.concurrent("lt-full", 1, wait_timeout=0, reschedule=3)
    client().rpush("lt:attempts", n)
    limiter.within_limit(lambda: limiter.within_limit(lambda: None))


@wurk_task(retry=0)
def calls_an_api(n: int):
    """A 429 from a client library counts as over-limit until the third attempt."""
    attempts = client().incr(f"lt:api:{n}")
    if attempts < 3:
        raise TooManyRequests("429 Too Many Requests")
    client().rpush("lt:done", n)


# --- task-level concurrency -----------------------------------------------------------

@wurk_task(concurrency={"limit": 2, "lease_s": 3}, retry=0)
def two_at_a_time(n: int, seconds: float):
    r = client()
    r.eval(ENTER, 2, "lt:running", "lt:max-running")
    stamp("lt:events", f"start {n}")
    try:
        time.sleep(seconds)
    finally:
        r.decr("lt:running")
        stamp("lt:events", f"end {n}")
        r.rpush("lt:done", n)


@wurk_task(retry=0)
def unlimited_twin(n: int, seconds: float):
    """The same work with no concurrency limit: the baseline for the drain time."""
    stamp("lt:events", f"start {n}")
    time.sleep(seconds)
    stamp("lt:events", f"end {n}")
    client().rpush("lt:done", n)


@wurk_task(retry=0)
def rendezvous(n: int, goal: int):
    """Hold a thread until `goal` of these run at once: proof that `goal` threads are
    free while limited jobs wait."""
    r = client()
    r.incr("lt:rendezvous")
    deadline = time.monotonic() + 20
    while int(r.get("lt:rendezvous") or 0) < goal and time.monotonic() < deadline:
        time.sleep(0.01)
    if int(r.get("lt:rendezvous") or 0) >= goal:
        r.rpush("lt:met", json.dumps({"n": n, "waiting": r.llen(WAITING)}))


WAITING = "wurk:concurrency-wait:7:default:tests.core.limiter_jobs.two_at_a_time"


@wurk_task(concurrency={"limit": 1, "lease_s": 3}, retry=0)
def held_until_killed(n: int):
    stamp("lt:events", f"start {n} {os.getpid()}")
    while True:
        time.sleep(0.05)


@wurk_task(concurrency=1, concurrency_key=lambda tenant, n: tenant, retry=0)
def per_tenant(tenant: str, n: int):
    r = client()
    r.eval(ENTER, 2, f"lt:running:{tenant}", f"lt:max-running:{tenant}")
    r.eval(ENTER, 2, "lt:running", "lt:max-running")
    time.sleep(0.05)
    r.decr("lt:running")
    r.decr(f"lt:running:{tenant}")
    r.rpush("lt:done", f"{tenant}-{n}")
