"""Every Redis key name Wurk reads or writes, exactly as Sidekiq spells it."""

from datetime import date, datetime

QUEUES = "queues"
QUEUE_PREFIX = "queue:"
SCHEDULE = "schedule"
RETRY = "retry"
DEAD = "dead"
PROCESSES = "processes"
PROCESS_CLEANUP = "process_cleanup"
STAT_PROCESSED = "stat:processed"
STAT_FAILED = "stat:failed"

PAUSED = "paused"
REAPER_LOCK = "super_fetch:reaper"
REAPER_FULL_LOCK = "super_fetch:reaper:full"

SORTED_SETS = (SCHEDULE, RETRY, DEAD)

# Leader election and periodic jobs (Sidekiq Enterprise's key names).
LEADER = "dear-leader"
LEADER_TOKEN = "leader-token"
PERIODIC = "periodic"

# Batches (Sidekiq Pro's key names): the indexes, newest last by score.
BATCHES = "batches"
DEAD_BATCHES = "dead-batches"
# The parts of a batch beside its hash `b-<bid>`: live jids (and open holds), jids
# failing now, dead jids, every child, children not complete, children not succeeded
# (Wurk's own), and the three callback markers.
BATCH_PARTS = ("jids", "failed", "died", "kids", "pkids", "skids", "complete", "success",
               "death")
# The history snapshot stream (Sidekiq Enterprise's `retain_history`).
HISTORY_METRICS = "history:metrics"


def queue(name: str) -> str:
    return QUEUE_PREFIX + name


def private_queue(name: str, host: str, pid: int, nonce: str) -> str:
    """A process's in-flight list for a queue: `queue:<q>|<host>|<pid>|<nonce>|0`."""
    return f"{QUEUE_PREFIX}{name}|{host}|{pid}|{nonce}|0"


def loop(lid: str) -> str:
    """A cron loop's hash: schedule, klass, options, tz, paused, lf, nf."""
    return f"loops:{lid}"


def loop_history(lid: str) -> str:
    """A cron loop's last fires, newest first: JSON `[fired_at, jid]`."""
    return f"loop-history:{lid}"


def recovered(jid: str) -> str:
    """How often the reaper reclaimed a job without it finishing (poison pills)."""
    return f"super_fetch:recovered:{jid}"


def work(identity: str) -> str:
    return identity + ":work"


def signals(identity: str) -> str:
    return identity + "-signals"


def stat(kind: str, day: str | None = None) -> str:
    """`stat:processed`, or the per-day key `stat:processed:2025-02-14` (UTC)."""
    return f"stat:{kind}" if day is None else f"stat:{kind}:{day}"


def metrics_minute(at: datetime) -> str:
    # Two-digit year, unpadded hour, two-digit minute: `j|250214|8:43`.
    return f"j|{at:%y%m%d}|{at.hour}:{at:%M}"


def metrics_ten_minutes(at: datetime) -> str:
    # The minute key without its last character: `j|250214|8:4`.
    return metrics_minute(at)[:-1]


def histogram(klass: str, at: datetime) -> str:
    return f"h|{klass}-{at.day}-{at.hour}:{at.minute}"


def deploy_marks(at: date) -> str:
    return f"{at:%Y%m%d}-marks"


def deploy_lock(label: str) -> str:
    return f"deploylock-{label}"


def unique(digest: str) -> str:
    """A unique job's lock, holding the holder's jid: `unique:<sha256 hex>` (Sidekiq
    Enterprise's name)."""
    return f"unique:{digest}"


def task_result(jid: str) -> str:
    # Wurk only: Sidekiq has no result store. The django.tasks backend keeps one JSON
    # record per jid here, with a TTL (wurk_django/tasks_backend).
    return f"wurk:task-result:{jid}"


def batch(bid: str) -> str:
    """A batch's hash: its description, callbacks, counts and fired events."""
    return f"b-{bid}"


def batch_part(bid: str, part: str) -> str:
    """`b-<bid>-<part>` for each of BATCH_PARTS."""
    return f"b-{bid}-{part}"


def batch_tag(tag: str) -> str:
    """The bids carrying a tag (a set)."""
    return f"tags:{tag}"


# Rate limiters: Sidekiq Enterprise's layout (observed in its Redis, not documented).
LIMITER_LIST = "lmtr-list"  # every limiter's name, for the dashboard


def limiter(name: str) -> str:
    """A limiter's meta hash: type, options (JSON), fingerprint."""
    return f"lmtr:{name}"


def limiter_stats(name: str) -> str:
    """A limiter's counters: held, immediate, waited, overages, reclaimed..."""
    return f"lmtr-stats:{name}"


def limiter_concurrent(name: str) -> str:
    """A concurrent limiter's leases: slot id -> expiry (epoch seconds)."""
    return f"lmtr-cs:{name}"


def limiter_bucket(name: str, epoch: int) -> str:
    """A bucket limiter's count for one interval, `epoch = floor(now / interval)`."""
    return f"lmtr-b:{name}:{epoch}"


def limiter_window(name: str) -> str:
    return f"lmtr-w:{name}"


def limiter_leaky(name: str) -> str:
    return f"lmtr-l:{name}"


def limiter_points(name: str) -> str:
    return f"lmtr-p:{name}"


# Task-level concurrency (Wurk only): slots per concurrency key, and jobs waiting for one.
CONCURRENCY_WAITING = "wurk:concurrency-waiting"  # JSON [key, queue] of each waiting list


def concurrency_slots(key: str) -> str:
    """The running jobs of a concurrency key: jid -> lease expiry (epoch seconds)."""
    return f"wurk:concurrency:{key}"


def concurrency_waiting(key: str, queue: str) -> str:
    """Jobs of a concurrency key parked until a slot frees, one list per queue; the
    queue's length first keeps every (queue, key) pair's name distinct."""
    return f"wurk:concurrency-wait:{len(queue)}:{queue}:{key}"
