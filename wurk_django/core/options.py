"""Every job option Wurk knows: its kind, where it may be given, and its check.

`@wurk_task`, `Job.wurk_options`, `.set()` and `Config.default_job_options` go through
`normalize` once per definition or call, never per push. A new option is one entry
in `OPTIONS`; an option whose feature is not built yet is an `UNSUPPORTED` entry, so
declaring it fails loudly instead of promising what Wurk does not do.
"""

import math
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, TypeGuard

from .errors import JobArgumentError
from .payload import check_at, scheduled_at

# Kinds: what an option is for, and so whether it reaches the job hash in Redis.
PAYLOAD = "payload"          # written into the job hash (Sidekiq's and Wurk's job options)
TRANSIENT = "transient"      # steers the push or the task, never reaches Redis
CRON = "cron"                # a task's periodic loop; checked with the loops, not here
SCHEDULE = "schedule"        # `.set(wait=..., wait_until=..., at=...)`: the push's `at`
UNSUPPORTED = "unsupported"  # a guarantee Wurk does not give yet: declaring it raises

# Scopes: where an option may be given.
TASK = "task"          # @wurk_task(...) and Job.wurk_options
CALL = "call"          # .set(...)
DEFAULTS = "defaults"  # Config.default_job_options (WURK["DEFAULT_JOB_OPTIONS"])
EVERYWHERE = frozenset((TASK, CALL, DEFAULTS))

RETRY_FOR_MAX_S = 1_000_000_000
# Old names of options, with the one to use instead.
RENAMED = {"on_commit": "transactional"}


class UnknownOptionWarning(UserWarning):
    """An unknown option one typo away from a known one (it is kept as a custom key)."""


@dataclass(frozen=True)
class Option:
    """One known option. `check(value, label)` returns the value to keep or raises
    JobArgumentError; `missing` says, for UNSUPPORTED options, what is not built."""

    kind: str
    scopes: frozenset = EVERYWHERE
    check: Callable[[Any, str], Any] | None = None
    missing: str = ""


# --- value checks: (value, label) -> the value to keep --------------------------------

def _is_whole(value) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def queue_name(value, label: str):
    if not isinstance(value, str) or not value:
        raise JobArgumentError(f"{label} must be a non-empty string, got {value!r}")
    return value


def retry_setting(value, label: str):
    if isinstance(value, bool) or (_is_whole(value) and value >= 0):
        return value
    raise JobArgumentError(f"{label} must be True, False or a number of retries >= 0, "
                           f"got {value!r}")


def _as_seconds(value, label: str) -> float:
    """Seconds from a finite number or a timedelta, or JobArgumentError naming `label`."""
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, (int, float)) and not isinstance(value, bool) \
            and math.isfinite(value):
        return value
    raise JobArgumentError(f"{label} must be seconds or a timedelta, got {value!r}")


def retry_for_seconds(value, label: str = "'retry_for'"):
    """Whole seconds from a number or a timedelta; None (no window) stays None."""
    if value is None:
        return None
    seconds = _as_seconds(value, label)
    if seconds > RETRY_FOR_MAX_S:
        where = label.rpartition("'retry_for'")[0]
        raise JobArgumentError(f"{where}retry_for of {int(seconds)} s is above the maximum "
                               f"{RETRY_FOR_MAX_S} s")
    return int(seconds)


def _positive_seconds(value, label: str) -> float:
    """Seconds from a positive finite number or a timedelta, at most RETRY_FOR_MAX_S."""
    seconds = _as_seconds(value, label)
    if not 0 < seconds <= RETRY_FOR_MAX_S:
        raise JobArgumentError(f"{label} must be more than 0 and at most {RETRY_FOR_MAX_S} "
                               f"seconds, got {value!r}")
    return seconds


def unique_seconds(value, label: str):
    """A unique lock's lifetime in whole seconds (rounded up: Redis's EX takes whole
    seconds); False or None switches uniqueness off, as `.set(unique_for=False)` does."""
    if value is None or value is False:
        return False
    return math.ceil(_positive_seconds(value, label))


def unique_policy(value, label: str):
    if value not in ("success", "start"):
        raise JobArgumentError(f"{label} must be 'success' (release the lock when the job "
                               f"succeeds) or 'start' (when it starts), got {value!r}")
    return value


def expiry_seconds(value, label: str):
    """Seconds a job may wait before it is skipped; None or False: it never expires."""
    if value is None or value is False:
        return None
    seconds = _positive_seconds(value, label)
    return int(seconds) if seconds == int(seconds) else seconds


CONCURRENCY_LEASE_S = 30
CONCURRENCY_MIN_LEASE_S = 2


def concurrency_limit(value, label: str):
    """How many jobs of a task may run at once in the whole cluster: a whole number >= 1,
    or {"limit": n, "lease_s": seconds} (a crashed process's slot frees within the lease)."""
    if _is_whole(value):
        value = {"limit": value}
    if not isinstance(value, dict) or set(value) - {"limit", "lease_s"}:
        raise JobArgumentError(f"{label} must be a number of jobs, or a dict with 'limit' "
                               f"and 'lease_s', got {value!r:.100}")
    limit, lease = value.get("limit"), value.get("lease_s", CONCURRENCY_LEASE_S)
    if not _is_whole(limit) or limit < 1:
        raise JobArgumentError(f"{label} must allow at least 1 job at once, got {limit!r}")
    if isinstance(lease, bool) or not isinstance(lease, (int, float)) \
            or not math.isfinite(lease) or lease < CONCURRENCY_MIN_LEASE_S:
        raise JobArgumentError(f"{label}: lease_s must be at least {CONCURRENCY_MIN_LEASE_S} "
                               f"seconds, got {lease!r}")
    return {"limit": limit, "lease_s": lease}


def flag_or_count(value, label: str):
    if isinstance(value, bool) or (_is_whole(value) and value >= 0):
        return value
    raise JobArgumentError(f"{label} must be True, False or a whole number, got {value!r}")


def boolean(value, label: str):
    if not isinstance(value, bool):
        raise JobArgumentError(f"{label} must be True or False, got {value!r}")
    return value


def string(value, label: str):
    if not isinstance(value, str):
        raise JobArgumentError(f"{label} must be a string, got {value!r}")
    return value


def string_list(value, label: str):
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise JobArgumentError(f"{label} must be a list of strings, got {value!r:.100}")
    return value


def hook(value, label: str):
    if value is not None and not callable(value):
        raise JobArgumentError(f"{label} must be callable, got {value!r}")
    return value


def transactional(value, label: str):
    """True or False, None for the project's default, or a database alias to watch."""
    if value is None or isinstance(value, bool) or (isinstance(value, str) and value):
        return value
    raise JobArgumentError(f"{label} must be True, False, None or a database alias, "
                           f"got {value!r}")


def _any(value, label: str):
    return value


OPTIONS: dict[str, Option] = {
    # Sidekiq's job options, written into the payload.
    "queue": Option(PAYLOAD, check=queue_name),
    "retry": Option(PAYLOAD, check=retry_setting),
    "retry_queue": Option(PAYLOAD, check=queue_name),
    "retry_for": Option(PAYLOAD, check=retry_for_seconds),
    "backtrace": Option(PAYLOAD, check=flag_or_count),
    "dead": Option(PAYLOAD, check=boolean),
    "tags": Option(PAYLOAD, check=string_list),
    "log_level": Option(PAYLOAD, check=string),
    "display_class": Option(PAYLOAD, check=string),
    "locale": Option(PAYLOAD, check=string),
    "wrapped": Option(PAYLOAD, frozenset((TASK, CALL)), string),
    "jid": Option(PAYLOAD, frozenset((CALL,)), queue_name),
    # Wurk's options that steer a push or the task and never reach Redis.
    "name": Option(TRANSIENT, frozenset((TASK,)), queue_name),
    "sync": Option(TRANSIENT, frozenset((TASK, CALL)), boolean),
    "transactional": Option(TRANSIENT, frozenset((TASK, CALL)), transactional),
    "retry_in": Option(TRANSIENT, frozenset((TASK,)), hook),
    "retries_exhausted": Option(TRANSIENT, frozenset((TASK,)), hook),
    # `unique_context(job)`: what makes two jobs the same for `unique_for` (core/unique.py).
    "unique_context": Option(TRANSIENT, frozenset((TASK,)), hook),
    # Cluster-wide concurrency of a task (core/concurrency.py), per `concurrency_key(*args)`.
    "concurrency": Option(PAYLOAD, frozenset((TASK,)), concurrency_limit),
    "concurrency_key": Option(TRANSIENT, frozenset((TASK,)), hook),
    # A task's periodic loop (checked with the loops: see cron.task_entries).
    "cron": Option(CRON, frozenset((TASK,))),
    "cron_args": Option(CRON, frozenset((TASK,))),
    "cron_tz": Option(CRON, frozenset((TASK,))),
    # When one call runs: all three become the push's `at`.
    "wait": Option(SCHEDULE, frozenset((CALL,))),
    "wait_until": Option(SCHEDULE, frozenset((CALL,))),
    "at": Option(SCHEDULE, frozenset((CALL,))),
    # Job guarantees, kept by feature modules (core/unique.py, encryption.py, expiry.py).
    "encrypt": Option(PAYLOAD, check=boolean),
    "unique_for": Option(PAYLOAD, check=unique_seconds),
    "unique_until": Option(PAYLOAD, check=unique_policy),
    "expires_in": Option(PAYLOAD, check=expiry_seconds),
    # Guarantees not built yet: accepted silently they would be broken promises.
    "pool": Option(UNSUPPORTED, missing="Sidekiq's per-job Redis pool (every job goes to "
                                        "the Redis of its Config)"),
    "client_class": Option(UNSUPPORTED, missing="Sidekiq's per-job client class"),
}

# Keys a push strips before writing (Sidekiq strips `pool` and `client_class` too).
TRANSIENT_KEYS = frozenset(name for name, option in OPTIONS.items()
                           if option.kind in (TRANSIENT, CRON)) | {"pool", "client_class"}
CRON_KEYS = tuple(name for name, option in OPTIONS.items() if option.kind == CRON)
# Options a task may declare that act on each of its calls (copied into its Setter).
CALL_DEFAULTS = ("sync", "transactional")
_SCOPE_WORDS = {TASK: "on a task", CALL: "in .set()", DEFAULTS: "in default_job_options"}


def normalize(options: Mapping, owner: str, scope: str) -> dict:
    """Check options given in `scope` and return them normalised.

    Unknown keys pass through as custom payload keys (middleware may read them); one a
    typo away from a known option warns. `owner` starts every message.
    """
    result = {}
    for key, value in options.items():
        if not isinstance(key, str):
            raise JobArgumentError(f"{owner}: option keys must be str, got {key!r}")
        option = OPTIONS.get(key)
        if option is None:
            _check_unknown(key, owner)
            result[key] = value
            continue
        if option.kind == UNSUPPORTED and value not in (None, False):
            raise JobArgumentError(f"{owner}: the {key!r} option is not supported yet: "
                                   f"Wurk has no {option.missing}; remove it")
        if scope not in option.scopes:
            raise JobArgumentError(f"{owner}: {key!r} cannot be given "
                                   f"{_SCOPE_WORDS[scope]}; {_where_allowed(option)}")
        result[key] = option.check(value, f"{owner}: {key!r}") if option.check else value
    # A key function with no limit to key would be accepted and do nothing.
    if result.get("concurrency_key") is not None and result.get("concurrency") is None:
        raise JobArgumentError(f"{owner}: 'concurrency_key' needs 'concurrency' (the limit "
                               f"each key gets), e.g. concurrency=5")
    return result


def normalize_call(options: Mapping, owner: str) -> dict:
    """`.set()` options, with `wait`, `wait_until` and `at` turned into the epoch `at`
    (None when the time is now or past, meaning "push at once")."""
    options = normalize(options, owner, CALL)
    for key in ("wait", "wait_until"):
        if key in options:
            options["at"] = scheduled_at(options.pop(key))
    if options.get("at") is not None:
        options["at"] = check_at(options["at"])
    return options


def payload_options(options: Mapping) -> dict:
    """The options written into each job's payload: no transient or cron keys."""
    return {key: value for key, value in options.items() if key not in TRANSIENT_KEYS}


def call_defaults(options: Mapping) -> dict:
    """A task's options that act on each call (`sync`, `transactional`)."""
    return {key: options[key] for key in CALL_DEFAULTS if key in options}


def cron_options(options: Mapping) -> dict:
    """A task's loop options as declared; cron.task_entries checks them."""
    return {key: options[key] for key in CRON_KEYS if options.get(key) is not None}


def check_item(item) -> None:
    """The wire-level checks of an item handed to the client, run once per push (cheap:
    the options in it were normalised by `.set()` or the task, or come from Redis)."""
    if not isinstance(item, dict) or "class" not in item or "args" not in item:
        raise JobArgumentError(f"a job must be a dict with 'class' and 'args': {item!r:.200}")
    if not isinstance(item["args"], list):
        raise JobArgumentError(f"'args' must be a list, got {type(item['args']).__name__}")
    for key in item:
        if not isinstance(key, str):
            raise JobArgumentError(f"job option keys must be str, got {key!r}")
    if "at" in item:
        check_at(item["at"])
    if "tags" in item and not isinstance(item["tags"], list):
        raise JobArgumentError("'tags' must be a list of strings")
    if "on_commit" in item:
        raise JobArgumentError("'on_commit' is not an option; use 'transactional'")


def _where_allowed(option: Option) -> str:
    places = [_SCOPE_WORDS[scope] for scope in (TASK, CALL, DEFAULTS) if scope in option.scopes]
    return f"give it {' or '.join(places)}"


def _check_unknown(key: str, owner: str) -> None:
    if key in RENAMED:
        raise JobArgumentError(f"{owner}: {key!r} is not an option; use "
                               f"{RENAMED[key]!r}")
    close = next((name for name in OPTIONS if _one_edit_apart(key, name)), None)
    if close is not None:
        warnings.warn(f"{owner}: unknown option {key!r} is kept as a custom payload key; "
                      f"did you mean {close!r}?", UnknownOptionWarning, stacklevel=4)


def _one_edit_apart(a: str, b: str) -> bool:
    """True if one insertion, deletion, substitution or swap of neighbours turns a into b."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diffs = [i for i in range(len(a)) if a[i] != b[i]]
        return len(diffs) == 1 or (len(diffs) == 2 and diffs[1] == diffs[0] + 1
                                   and a[diffs[0]] == b[diffs[1]] and a[diffs[1]] == b[diffs[0]])
    short, long_ = (a, b) if len(a) < len(b) else (b, a)
    return any(long_[:i] + long_[i + 1:] == short for i in range(len(long_)))
