"""Pushing jobs: normalise, run client middleware, check arguments, write to Redis."""

from typing import Any

from . import keys
from .config import Config, get_default_config
from .encryption import require_key
from .errors import JobArgumentError
from .features import COLLECTING, HOOKS, PUSH, intercepted, run_client_hooks
from .features import install as install_features
from .options import TRANSIENT_KEYS, check_item, retry_for_seconds
from .payload import Interval, check_args, check_at, dumps, encode_error, new_jid, scheduled_at
from .push_buffer import buffer_for
from .redis import RedisConnection, connection_for, lua_source
from .registry import REGISTRY, task_class

DEFAULT_BATCH_SIZE = 1000
_ENCODE_ERRORS = (TypeError, ValueError, RecursionError)  # UnicodeEncodeError is a ValueError

# A job may carry a claim under this key (a unique job's lock, core/unique.py): it is then
# written only if it takes the claim's lock, in the same script as the push, so a unique
# push is still one round trip. The key never reaches Redis. A claim has `key`, `ttl` and
# `refused(job, holder)`, told when another job holds the lock.
CLAIM = "_wurk_claim"
# Sent with EVAL, not EVALSHA: a push replayed after a Redis restart (reliable push) must
# not meet an empty script cache, and Redis caches the compiled body by its hash anyway.
_CLAIM_SCRIPT = lua_source("unique_push")
# The script's replies for a job that may go: 1, its lock taken now; 2, its own jid held
# the lock already (a replayed push: not written twice). Anything else names the holder.
_CLAIM_TAKEN = (1, 2)

def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _bulk_parts(item) -> tuple[dict, list, int, list | float | None]:
    """A bulk item checked up front (a bad time in a later slice must not leave earlier
    slices pushed): the shared item, the argument lists, the slice size and the time(s)."""
    if not isinstance(item, dict):
        raise JobArgumentError(f"push_bulk needs a dict with 'class' and 'args': {item!r:.200}")
    item = dict(item)
    batch_size = item.pop("batch_size", DEFAULT_BATCH_SIZE)
    args_list = item.get("args")
    if not isinstance(args_list, list) or not all(isinstance(a, list) for a in args_list):
        raise JobArgumentError("push_bulk needs 'args' as a list of argument lists, "
                               "e.g. [[1], [2]]")
    if not _is_number(batch_size) or batch_size < 1:
        raise JobArgumentError(f"batch_size must be a positive number, got {batch_size!r}")
    at = item.pop("at", None)
    if isinstance(at, list) and len(at) != len(args_list):
        raise JobArgumentError(f"'at' has {len(at)} times for {len(args_list)} jobs; "
                               f"give one number or one per job")
    for when in (at if isinstance(at, list) else () if at is None else [at]):
        check_at(when)
    if "jid" in item and len(args_list) != 1:
        raise JobArgumentError("a jid may be given only when pushing exactly one job")
    return item, args_list, int(batch_size), at


class Client:
    """Pushes jobs for one config; cheap to create, shares the process's Redis pool."""

    def __init__(self, config: Config | None = None, connection: RedisConnection | None = None):
        self.config = config or get_default_config()
        self._connection = connection
        install_features()

    @property
    def connection(self) -> RedisConnection:
        if self._connection is None:
            self._connection = connection_for(self.config)
        return self._connection

    # --- public API ---------------------------------------------------------------

    def push(self, item: dict, origin: str = PUSH) -> str | None:
        """Push one job; return its jid, or None if client middleware halted it.

        With a `push_deferrer` (Django's on-commit hook) the push may wait for the
        surrounding transaction; the jid is known now and returned at once. `origin`
        tells feature hooks a job seen again (promoted by the poller, revived by hand)
        from a new one.
        """
        job = self.normalize(item)  # first: it rejects an item that is not a dict
        transactional = item.get("transactional")
        deferrer = self.config.push_deferrer
        # A batch block writes its jobs itself, at its exit: they never wait for a commit.
        if (deferrer is not None and transactional is not False and origin == PUSH
                and not COLLECTING.get()):
            self._check_encodable(job)  # fail at the call site, not when the commit runs
            if deferrer(lambda: self._push_now(job, origin), transactional):
                return job["jid"]
        return self._push_now(job, origin)

    def _check_encodable(self, job: dict) -> None:
        check_args(job["args"], self.config.on_complex_arguments)
        try:
            dumps(job)
        except _ENCODE_ERRORS as exc:
            raise encode_error(job, exc) from None
        if job.get("encrypt"):
            require_key(self.config)  # no key: the push fails here, not at the commit

    def _push_now(self, job: dict, origin: str = PUSH) -> str | None:
        prepared = self.prepare(job, origin)
        if prepared is None:
            return None
        if self.raw_push([prepared]):
            return None  # refused: another job holds its unique lock
        return prepared["jid"]

    def push_bulk(self, item: dict) -> list[str | None]:
        """Push many jobs of one class: `item["args"]` is a list of argument lists.

        Each slice of `batch_size` jobs is one pipeline, one round trip.
        """
        item, args_list, batch_size, at = _bulk_parts(item)
        # Every job shares the class and options: normalise them once, then vary args,
        # jid and time per job (the same result as normalising each, at bulk speed).
        given_jid, given_created_at = "jid" in item, "created_at" in item
        template = self.normalize({**item, "args": []})
        results: list[str | None] = []
        for start in range(0, len(args_list), batch_size):
            chunk = args_list[start:start + batch_size]
            prepared = []
            created_at = self.config.job_clock()
            for offset, args in enumerate(chunk):
                job = dict(template)
                job["args"] = args
                if not given_jid:
                    job["jid"] = new_jid()
                if not given_created_at:
                    job["created_at"] = created_at
                if at is not None:
                    job["at"] = at[start + offset] if isinstance(at, list) else at
                prepared.append(self.prepare(job))
            jobs = [job for job in prepared if job is not None]
            refused = self.raw_push(jobs) if jobs else None
            results += [None if job is None or (refused and job["jid"] in refused)
                        else job["jid"] for job in prepared]
        return results

    @classmethod
    def enqueue_to(cls, queue: str, klass: Any, *args: Any) -> str | None:
        return cls().push({"queue": queue, "class": klass, "args": list(args)})

    @classmethod
    def enqueue_to_in(cls, queue: str, interval: Interval, klass: Any,
                      *args: Any) -> str | None:
        item = {"queue": queue, "class": klass, "args": list(args)}
        at = scheduled_at(interval)
        if at is not None:
            item["at"] = at
        return cls().push(item)

    # --- steps --------------------------------------------------------------------

    def normalize(self, item: dict) -> dict:
        """Validate the item's shape and merge task and default options under it."""
        check_item(item)
        task = task_class(item["class"])
        if task is None:
            if not isinstance(item["class"], str) or not item["class"]:
                raise JobArgumentError(
                    f"'class' must be a registered task or a name, got {item['class']!r}")
            if item["class"] in REGISTRY:
                task = REGISTRY.find(item["class"])
        job = dict(self.config.default_job_options)
        if task is not None:
            job.update(task.resolved_options)
        wrapped = item.get("wrapped")
        if isinstance(wrapped, str) and wrapped in REGISTRY:
            job.update(REGISTRY.get(wrapped).resolved_options)
        job.update(item)
        if task is not None:
            job["class"] = task.wire_name

        if not str(job.get("queue") or ""):
            raise JobArgumentError("'queue' must be a non-empty string")
        for key in TRANSIENT_KEYS.intersection(job):
            del job[key]
        job["class"] = str(job["class"])
        job["queue"] = str(job["queue"])
        if not job.get("jid"):
            job["jid"] = new_jid()
        if job.get("retry_for") is not None:
            job["retry_for"] = retry_for_seconds(job["retry_for"])
        if "created_at" not in job:
            job["created_at"] = self.config.job_clock()
        return job

    def prepare(self, job: dict, origin: str = PUSH) -> dict | None:
        """Run client middleware, the argument check, then the features' client hooks;
        None when a middleware or hook halts the push."""
        config = self.config
        chain = config.client_middleware
        if len(chain):
            result = chain.invoke(config, (job["class"], job, job["queue"], self.connection),
                                  lambda: job)
            if not result:
                return None
        check_args(job["args"], config.on_complex_arguments)
        if HOOKS.client:
            return run_client_hooks(job, self, origin)
        return job

    def raw_push(self, jobs: list[dict]) -> set | None:
        """Write prepared jobs in one round trip: their queues, or `schedule`.

        Returns the jids of the jobs refused because another job holds their unique lock
        (None when there are none). With reliable push on, a push that finds Redis
        unreachable is kept in memory and sent later (core/push_buffer.py).
        """
        refused = None
        if HOOKS.interceptors:
            jobs, refused, taken = self._intercept(jobs)
            if taken:
                return refused
        deliveries = self._deliveries(jobs)
        if self.config.reliable_push is None:
            return send(self.connection, deliveries)
        return buffer_for(self.connection, self.config, send).push(deliveries)

    def _intercept(self, jobs: list[dict]) -> tuple[list[dict], set | None, bool]:
        """Offer the jobs to the push interceptors: (jobs left, refused jids, taken).

        A batch block collects its jobs (features.COLLECTING, or jobs with a bid): their
        unique locks are taken first, so it collects only those that go. Otherwise the
        claims stay for the push's own script, out of the interceptors' sight.
        """
        refused = None
        claimed = CLAIM in jobs[0] if len(jobs) == 1 else any(CLAIM in job for job in jobs)
        if not claimed:
            return jobs, None, intercepted(jobs, self.config)
        if COLLECTING.get() or any("bid" in job for job in jobs):
            jobs, refused = self.settle_claims(jobs)
            return jobs, refused, not jobs or intercepted(jobs, self.config)
        claims = {id(job): job.pop(CLAIM) for job in jobs if CLAIM in job}
        if intercepted(jobs, self.config):
            # Taken over unexpectedly: its locks are still taken, though none can be
            # refused any more.
            for job in jobs:
                if id(job) in claims:
                    job[CLAIM] = claims[id(job)]
            return jobs, self.settle_claims(jobs)[1], True
        for job in jobs:
            if id(job) in claims:
                job[CLAIM] = claims[id(job)]
        return jobs, refused, False

    def _deliveries(self, jobs: list[dict]) -> list[tuple]:
        """`(job, payload, queue or None for schedule, score, claim)` for each job."""
        deliveries = []
        enqueued_at = None
        for job in jobs:
            claim = job.pop(CLAIM, None)
            at = job.pop("at", None)
            if at is None:
                if enqueued_at is None:
                    enqueued_at = self.config.job_clock()
                job["enqueued_at"] = enqueued_at
            else:
                job.pop("enqueued_at", None)
            try:
                payload = dumps(job)
            except _ENCODE_ERRORS as exc:
                raise encode_error(job, exc) from None
            deliveries.append((job, payload, job["queue"] if at is None else None, at, claim))
        return deliveries

    def settle_claims(self, jobs: list[dict]) -> tuple[list[dict], set]:
        """Take the unique locks of claimed jobs now (one round trip) for a path that does
        not write them through `raw_push`'s script: a push interceptor, perform_inline.
        Returns the jobs that may go and the jids of those refused."""
        claimed = [(job, job.pop(CLAIM)) for job in jobs if CLAIM in job]
        commands = [claim_command(claim, job["jid"], "lock") for job, claim in claimed]
        connection = self.connection
        replies = connection.write(connection.execute_batch, commands)
        refused = set()
        for (job, claim), reply in zip(claimed, replies):
            if reply not in _CLAIM_TAKEN:
                claim.refused(job, reply)
                refused.add(job["jid"])
        return [job for job in jobs if job["jid"] not in refused], refused


def claim_command(claim, jid: str, mode: str, payload: bytes = b"", score=0,
                  queue: str = "") -> tuple:
    """The script call that takes a claim's lock and, unless `mode` is "lock", writes the
    job ("queue": to `queue:<queue>`, "schedule": to `schedule` at `score`)."""
    job_keys: tuple[str, ...]
    if mode == "queue":
        job_keys = (claim.key, keys.queue(queue), keys.QUEUES)
    elif mode == "schedule":
        job_keys = (claim.key, keys.SCHEDULE)
    else:
        job_keys = (claim.key,)
    return ("EVAL", _CLAIM_SCRIPT, len(job_keys), *job_keys, jid, claim.ttl, mode, payload,
            score, queue)


def delivery_commands(deliveries: list[tuple]) -> tuple[list[tuple], list[tuple[int, int]]]:
    """The raw commands that write `deliveries`, and `(delivery, reply)` indexes of the
    claimed ones, whose script replies say whether they went."""
    commands: list[tuple] = []
    claimed = []
    by_queue: dict[str, list[bytes]] = {}
    scheduled: list = []
    for index, (job, payload, queue, score, claim) in enumerate(deliveries):
        if claim is not None:
            claimed.append((index, len(commands)))
            mode = "queue" if queue is not None else "schedule"
            commands.append(claim_command(claim, job["jid"], mode, payload, score or 0,
                                          queue or ""))
        elif queue is None:
            scheduled += (score, payload)
        else:
            by_queue.setdefault(queue, []).append(payload)
    if by_queue:
        commands.append(("SADD", keys.QUEUES, *by_queue))
        commands += [("LPUSH", keys.queue(queue), *payloads)
                     for queue, payloads in by_queue.items()]
    if scheduled:
        commands.append(("ZADD", keys.SCHEDULE, *scheduled))
    return commands, claimed


def send(connection: RedisConnection, deliveries: list[tuple]) -> set | None:
    """Write deliveries in one round trip; the jids refused by their unique locks."""
    commands, claimed = delivery_commands(deliveries)
    replies = connection.write(connection.execute_batch, commands)
    if not claimed:
        return None
    refused = set()
    for index, reply_at in claimed:
        reply = replies[reply_at]
        if reply not in _CLAIM_TAKEN:
            job, claim = deliveries[index][0], deliveries[index][4]
            claim.refused(job, reply)
            refused.add(job["jid"])
    return refused


_default_client: Client | None = None


def default_client() -> Client:
    """The client for the default config, made once: pushes from task APIs use it."""
    global _default_client
    config = get_default_config()
    client = _default_client
    if client is None or client.config is not config:
        client = _default_client = Client(config)
    return client
