"""One periodic loop before it reaches Redis: its id, and the checks that turn a
`cron_entries` item or a task's `cron=` options into an entry."""

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field

from .cron_schedule import normalize_expression, zone_for
from .errors import ConfigurationError, JobArgumentError
from .payload import check_args, dumps

# Entry keys with a meaning of their own; any other key is kept in `options`.
ENTRY_KEYS = ("cron", "task", "queue", "retry", "args", "tz", "paused")


def lid_for(schedule: str, klass: str, options: Mapping) -> str:
    """The loop id: sha1 of schedule, class and the options sorted by key."""
    opts_json = json.dumps(dict(sorted(options.items())), separators=(",", ":"),
                           ensure_ascii=False)
    return hashlib.sha1(f"{schedule}|{klass}|{opts_json}".encode()).hexdigest()[:16]


@dataclass(frozen=True)
class CronEntry:
    """One configured loop, before it is written to Redis."""

    schedule: str
    klass: str
    tz: str = ""
    options: dict = field(default_factory=dict)  # queue, retry, args, extra keys
    paused: bool | None = None  # None: not given, a new loop starts unpaused

    @property
    def lid(self) -> str:
        options = dict(self.options)
        if self.paused is not None:
            options["paused"] = self.paused
        return lid_for(self.schedule, self.klass, options)


def check_entry(raw: Mapping, where: str, default_tz: str = "") -> CronEntry:
    """Check one `cron_entries` item and turn it into an entry, its task still as
    written (see `entry_from_setting`); errors name `where`."""
    if not isinstance(raw, Mapping):
        raise ConfigurationError(f"{where} must be a dict with 'cron' and 'task', "
                                 f"got {raw!r:.100}")
    if not raw.get("task"):
        raise ConfigurationError(f"{where}: 'task' must name a task, got {raw.get('task')!r}")
    tz = raw.get("tz") or default_tz or ""
    try:
        normalize_expression(raw.get("cron"))
        zone_for(tz)
    except ConfigurationError as exc:
        raise ConfigurationError(f"{where}: {exc}") from None
    schedule = " ".join(raw["cron"].split())
    options = {key: value for key, value in raw.items() if key not in ("cron", "task", "tz",
                                                                        "paused")}
    if "args" in options:
        options["args"] = normalized_args(options["args"], where)
    if "queue" in options and not (isinstance(options["queue"], str) and options["queue"]):
        raise ConfigurationError(f"{where}: 'queue' must be a non-empty string")
    try:
        dumps(options)  # stored as JSON in the loop's hash
    except (TypeError, ValueError, RecursionError) as exc:
        raise ConfigurationError(f"{where}: options must be JSON values: {exc}") from None
    paused = raw.get("paused")
    return CronEntry(schedule=schedule, klass=raw["task"], tz=tz, options=options,
                     paused=None if paused is None else bool(paused))


def normalized_args(args, where: str) -> list:
    """Static loop arguments as a list: a bare value (a dict too) is one argument."""
    args = list(args) if isinstance(args, (list, tuple)) else [args]
    try:
        check_args(args, "raise")
    except JobArgumentError as exc:
        raise ConfigurationError(f"{where}: 'args': {exc}") from None
    return args


def task_entry(name: str, cron: Mapping, default_tz: str = "") -> CronEntry:
    """The loop a `@wurk_task(cron=...)` task declares, checked here rather than when
    the task is defined, so a bad one is a system check error, not an import error."""
    where = f"task {name} (cron=...)"
    if "cron" not in cron:
        raise ConfigurationError(f"{where}: {', '.join(cron)} given without 'cron'")
    tz = cron.get("cron_tz") or default_tz
    try:
        normalize_expression(cron["cron"])
        zone_for(tz)
    except ConfigurationError as exc:
        raise ConfigurationError(f"{where}: cron: {exc}") from None
    options = {}
    if "cron_args" in cron:
        options["args"] = normalized_args(cron["cron_args"], where)
    return CronEntry(schedule=" ".join(cron["cron"].split()), klass=name, tz=tz,
                     options=options)


def entry_label(index: int, raw) -> str:
    task = raw.get("task") if isinstance(raw, Mapping) else None
    return f"cron entry {index} ({task!s:.100})"

