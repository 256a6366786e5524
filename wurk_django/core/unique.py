"""Unique jobs (`unique_for`, `unique_until`, `unique_context`), Sidekiq Enterprise's
layout: a push takes `unique:<sha256 hex>` holding its jid for `unique_for` seconds (plus
the delay of a scheduled job); a duplicate push while the lock is held returns None.

The lock is taken in the push's own script (client.CLAIM), so a unique push is one round
trip. The worker releases it when the job succeeds (`unique_until="success"`, the
default) or just before it starts ("start"); a job that dies releases it too. A failing
job keeps it for its retries, bounded by the TTL, so a crashed process never leaves a
lock behind for longer than that. The poller's re-push of a scheduled or retrying job
(its own jid, origin PROMOTION) never counts as a duplicate.
"""

import hashlib
import logging
import math
import os
import re
import time

from . import keys
from .client import CLAIM
from .config import get_default_config
from .features import HOOKS, PUSH, ClientHook, DeathHook, JobHook
from .payload import dumps
from .redis import REDIS_ERRORS, connection_for
from .registry import REGISTRY, task_class
from .testing_modes import DISABLE, active_mode

logger = logging.getLogger("wurk")

FIELD = "unique_for"
# Client hooks run by order: encryption (40) first, so the digest never covers a secret
# in plaintext; job hooks: outside expiry (70) and decryption (80), so an expired skip
# counts as a success that releases the lock, and the digest sees the stored arguments.
CLIENT_ORDER = 50
JOB_ORDER = 60
# Every float's JSON has a digit then "." or an exponent: text without one holds none.
_FLOATISH = re.compile(rb"\d[.eE]")


# --- the lock's key -----------------------------------------------------------------

def ruby_float(value: float) -> str:
    """A float as Ruby's `Float#to_s` (and so Sidekiq's JSON) writes it.

    Both print the shortest digits that read back the same; they differ in where the
    exponent form starts (Ruby: from 1e16 down to 1e15, and below 1e-4) and Ruby's
    mantissa always has a fraction ("1.0e+20" where Python writes "1e+20").
    """
    text = repr(value)
    if not math.isfinite(value) or value == 0:
        return text
    sign = "-" if text.startswith("-") else ""
    mantissa, _, exponent = text.lstrip("-").partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = (whole + fraction).lstrip("0")
    # The value is 0.<digits> x 10**point.
    point = len(whole) + int(exponent or 0) - (len(whole + fraction) - len(digits))
    digits = digits.rstrip("0") or "0"
    if -4 < point <= 15:
        if point <= 0:
            return f"{sign}0.{'0' * -point}{digits}"
        whole = digits[:point].ljust(point, "0")
        return f"{sign}{whole}.{digits[point:] or '0'}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}e{point - 1:+03d}"


def ruby_json(value) -> bytes:
    """Compact JSON as Ruby's generator writes it: Wurk's encoding, with floats in Ruby's
    form, so Ruby and Python pushes of the same job hash to the same lock."""
    floats: list[float] = []

    def mark(item, nonce):
        if type(item) is float:
            floats.append(item)
            return f"\x00{nonce}-{len(floats) - 1}\x00"
        if isinstance(item, dict):
            return {key: mark(child, nonce) for key, child in item.items()}
        if isinstance(item, (list, tuple)):
            return [mark(child, nonce) for child in item]
        return item

    text = dumps(value)
    if _FLOATISH.search(text) is None:
        return text  # no float in it (a string like "v1.2" only costs the exact path)
    nonce = os.urandom(8).hex()  # no string in the arguments can look like a marker
    text = dumps(mark(value, nonce))
    for index, number in enumerate(floats):
        text = text.replace(f'"\\u0000{nonce}-{index}\\u0000"'.encode(),
                            ruby_float(number).encode(), 1)
    return text


def context_for(job: dict) -> object:
    """What makes two jobs the same: the task's `unique_context(job)`, else Sidekiq
    Enterprise's `[class, queue, args]`."""
    task = _task(job.get("class"))
    custom = getattr(task, "unique_context", None)
    if custom is not None:
        return custom(job)
    return [job.get("class"), job.get("queue"), job.get("args")]


def _task(name):
    if not isinstance(name, str):
        return None
    try:
        return REGISTRY.find(name)
    except Exception:  # noqa: BLE001 - an unimportable class uses the default context
        return None


def lock_key(job: dict) -> str:
    return keys.unique(hashlib.sha256(ruby_json(context_for(job))).hexdigest())


def lock_ttl(job: dict) -> int:
    """`unique_for`, plus the wait of a job scheduled for later (whole seconds)."""
    ttl = int(job[FIELD])
    at = job.get("at")
    if at is not None:
        ttl += max(math.ceil(float(at) - time.time()), 0)
    return max(ttl, 1)


def locked(task, args: list, queue: str | None = None, config=None) -> str | None:
    """The jid of the job holding the lock for `task(*args)` on `queue`, or None.

    `task` is a task or a wire name; `queue` defaults to the task's own queue.
    """
    found = task_class(task) or _task(task)
    name = getattr(found, "wire_name", None) or str(task)
    options = getattr(found, "resolved_options", None) or {}
    config = config or get_default_config()
    job = {**options, "class": name, "args": list(args),
           "queue": queue or options.get("queue") or config.default_job_options["queue"]}
    connection = connection_for(config)
    holder = connection.read(connection.client.get, lock_key(job))
    return None if holder is None else holder.decode()


# --- push: the claim ----------------------------------------------------------------

class Claim:
    """A pending lock a push carries to its script (client.CLAIM)."""

    __slots__ = ("key", "ttl")

    def __init__(self, key: str, ttl: int):
        self.key = key
        self.ttl = ttl

    def refused(self, job: dict, holder) -> None:
        if isinstance(holder, bytes):
            holder = holder.decode("utf-8", "replace")
        logger.info("duplicate %s dropped (jid=%s blocked by jid=%s)", job.get("class"),
                    job.get("jid"), holder)


def _claim(job: dict, client, origin: str) -> dict:
    # Only a new push takes the lock. The poller's re-push of a scheduled or retrying job
    # and the API's revival of a dead one are jobs already accepted: never dropped.
    if origin != PUSH or not job.get(FIELD) or active_mode() != DISABLE:
        return job
    job[CLAIM] = Claim(lock_key(job), lock_ttl(job))
    return job


# --- worker: release ----------------------------------------------------------------

def release(connection, config, job: dict) -> None:
    """Delete the job's lock if it still holds its jid; errors are reported, not raised."""
    try:
        connection.script("leader_release")(keys=[lock_key(job)], args=[job.get("jid") or ""])
    except REDIS_ERRORS as exc:
        config.handle_exception(exc, {"context": f"could not release the unique lock of "
                                                 f"{job.get('class')} jid={job.get('jid')}"})
    except Exception as exc:  # noqa: BLE001 - a unique_context that fails on this job
        config.handle_exception(exc, {"context": "unique_context failed", "job": job})


def _around(run, proceed):
    job = run.job
    if not job.get(FIELD) or active_mode() != DISABLE:
        return proceed()
    if job.get("unique_until") == "start":
        release(run.connection, run.config, job)  # a duplicate may be pushed while it runs
        return proceed()
    result = proceed()  # a failure keeps the lock for the retries, bounded by its TTL
    release(run.connection, run.config, job)
    return result


def _died(job: dict, exc: BaseException, config) -> None:
    if job.get(FIELD) and active_mode() == DISABLE:
        release(connection_for(config), config, job)


def _undo(job: dict, config) -> None:
    release(connection_for(config), config, job)  # only if it still holds this jid


HOOKS.add(ClientHook(FIELD, CLIENT_ORDER, _claim, _undo))
HOOKS.add(JobHook(FIELD, JOB_ORDER, _around))
HOOKS.add(DeathHook(FIELD, _died))
