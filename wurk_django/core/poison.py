"""Poison pills: a job reclaimed three times without finishing goes to the dead set."""

import logging

from . import keys, statsd
from .payload import dumps
from .retry import run_death_handlers, send_to_dead

logger = logging.getLogger("wurk")

RECOVERED_TTL_S = 259_200  # 72 h, refreshed at every reclaim
POISON_CAP = 3


class Poisoned(Exception):
    """The job was reclaimed from dead workers too often; it is probably killing them."""


def is_poison(count: int) -> bool:
    """The cap, kept in one place: the third reclaim within 72 h is one too many."""
    return count >= POISON_CAP


def bump(connection, jid: str) -> int:
    """Count one more reclaim. Never retried: a double bump could kill a healthy job."""
    pipe = connection.pipeline()
    pipe.incr(keys.recovered(jid))
    pipe.expire(keys.recovered(jid), RECOVERED_TTL_S)
    return int(pipe.execute()[0])


def recovery_count(connection, jid: str) -> int:
    value = connection.read(connection.client.get, keys.recovered(jid))
    return int(value) if value else 0


def clear(connection, jid: str) -> None:
    if jid:
        connection.write(connection.client.delete, keys.recovered(jid))


def kill(connection, config, raw: bytes, job: dict, count: int, source_key: str) -> None:
    """Move a poison pill from the list it is in to `dead`, stamped with the reason."""
    exc = Poisoned(f"{job.get('class')} was recovered {count} times without completing "
                   f"(it may be crashing its worker)")
    job = dict(job)
    job["error_class"] = "wurk_django.core.poison.Poisoned"
    job["error_message"] = str(exc)
    logger.warning("Poison pill %s (%s) sent to the dead set after %d reclaims",
                   job.get("jid"), job.get("class"), count)
    try:
        member = dumps(job)
    except (ValueError, RecursionError):
        member = raw  # cannot be written back (nested too deeply): keep its bytes
    send_to_dead(connection, config, member)
    # Removed only once it is in `dead`: a crash in between repeats the kill, never
    # loses the job. The reaper reads from the right end, so remove from there.
    connection.write(connection.client.lrem, source_key, -1, raw)
    statsd.increment(config, "jobs.poison", statsd.job_tags(job, job.get("queue")))
    run_death_handlers(config, job, exc)


def check_reclaimed(connection, config, raw: bytes, job: dict, source_key: str) -> bool:
    """Count a reclaim of `job` (its bytes `raw` still in `source_key`, a dead owner's
    private list) and kill it past the cap. True if it was killed."""
    jid = job.get("jid")
    if not isinstance(jid, str) or not jid:
        return False
    count = bump(connection, jid)
    if not is_poison(count):
        return False
    kill(connection, config, raw, job, count, source_key)
    return True
