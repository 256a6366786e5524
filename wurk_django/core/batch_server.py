"""The worker side of batches, the feature module every worker loads: the job hook that
books each batch job's outcome exactly once and fires callbacks when that finished its
batch, and the death hook for a batch job that died.

Every step is a script keyed by jid whose set operations do nothing the second time, so
a job run twice (reclaimed after a crash, requeued at shutdown) is counted once:

- skipped because its batch was invalidated: counted as a success, without running;
- ran: a success, then the fire gate (nothing live left: evaluate the callbacks);
- raised (a retry will follow): failing, once per jid; the exception goes on to the retry
  logic, which may book a death (the death hook then moves it to the batch's dead);
- set aside by another feature (`JobHandled`: a limiter rescheduled it) or interrupted by
  shutdown: nothing is booked, it runs again later.
"""

from . import keys

# Importing batch_callbacks registers the callback and no-op tasks in this worker.
from .batch_callbacks import evaluate, fire_death, redrive
from .batch_push import RUNNING
from .batch_redis import batch_keys, call
from .errors import Shutdown
from .features import HOOKS, DeathHook, JobHandled, JobHook, JobRun
from .redis import REDIS_ERRORS, connection_for
from .retry import caused_by_shutdown

JOB_HOOK_ORDER = 10  # outermost: an expired or decrypted-away job still counts


def _invalidated(connection, bid: str) -> bool:
    reply = connection.read(connection.execute_batch, [("HGET", keys.batch(bid), "invalidated")])
    return reply[0] == b"1"


def _succeeded(connection, config, bid: str, jid: str) -> None:
    _, _, live, pkids, _ = redrive(lambda: call(
        connection, "batch_ack_success", batch_keys(bid, "jids", "failed", "pkids", "skids"),
        [jid]))
    if live == 0 and pkids == 0:
        redrive(lambda: evaluate(connection, config, bid))


def _failed(connection, config, bid: str, jid: str) -> None:
    """Book the failure; if Redis is away, say so and let the job's own error go on (the
    job stays live in the batch, so nothing finishes early; only the count lags)."""
    try:
        call(connection, "batch_ack_failed", batch_keys(bid, "jids", "failed"), [jid])
    except REDIS_ERRORS as exc:
        config.handle_exception(exc, {"context": f"could not count a failure in batch {bid}",
                                      "jid": jid})


def around(run: JobRun, proceed):
    """The job hook on `bid`, outermost of the features' hooks."""
    bid, jid = run.job.get("bid"), run.job.get("jid")
    if not isinstance(bid, str) or not bid or not isinstance(jid, str):
        return proceed()
    connection, config = run.connection, run.config
    if _invalidated(connection, bid):
        _succeeded(connection, config, bid, jid)  # cancelled: skipped, and counts as done
        return None
    if run.instance is not None:
        run.instance.bid = bid
    token = RUNNING.set(bid)
    try:
        result = proceed()
    except (JobHandled, Shutdown):
        raise
    except BaseException as exc:
        if not caused_by_shutdown(exc):
            _failed(connection, config, bid, jid)
        raise
    finally:
        RUNNING.reset(token)
    _succeeded(connection, config, bid, jid)
    return result


def died(job: dict, exc: BaseException, config) -> None:
    """The death hook on `bid`: the job leaves the live set for the batch's dead set; the
    first death fires `death` up the tree, and `complete` may now be due."""
    bid, jid = job.get("bid"), job.get("jid")
    if not isinstance(bid, str) or not bid or not isinstance(jid, str):
        return
    connection = connection_for(config)
    _, live, dead, pkids = redrive(lambda: call(
        connection, "batch_ack_complete", batch_keys(bid, "jids", "died", "failed", "pkids"),
        [jid]))
    if dead:
        redrive(lambda: fire_death(connection, config, bid))
    if live == 0 and pkids == 0:
        redrive(lambda: evaluate(connection, config, bid))


HOOKS.add(JobHook("bid", JOB_HOOK_ORDER, around))
HOOKS.add(DeathHook("bid", died))
