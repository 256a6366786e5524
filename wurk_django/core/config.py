"""The engine's one configuration object: a validated, frozen dataclass with defaults."""

import dataclasses
import logging
import os
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from . import sizing
from . import validation as check
from .cron_entry import check_entry, entry_label
from .cron_schedule import zone_for
from .errors import ConfigurationError
from .middleware import Chain
from .outage import NoticeThrottle
from .payload import TIMESTAMP_FORMATS, timestamp_clock

DEFAULT_REDIS_URL = "redis://localhost:6379/0"
# How long a process's heartbeat entry (its identity hash) lives after each beat, as in
# Sidekiq; liveness everywhere (the dashboard, the reaper) is read from it.
PROCESS_TTL_S = 60
DEFAULT_JOB_OPTIONS = {"retry": True, "queue": "default"}
LIFECYCLE_EVENTS = ("startup", "quiet", "shutdown", "exit", "heartbeat", "beat", "leader")
ONE_SHOT_EVENTS = ("startup", "quiet", "shutdown", "exit")
FETCH_MODES = ("reliable", "basic")
# The Sidekiq web UI routes only these queue names.
ROUTABLE_QUEUE = re.compile(r"^[a-z_:.\-0-9]+$", re.IGNORECASE)

logger = logging.getLogger("wurk")


def parse_queues(entries, owner: str = "queues") -> tuple[tuple[str, int], ...]:
    """Parse a list of queue entries; a bare string would be read one letter per queue."""
    if isinstance(entries, str):
        raise ConfigurationError(f"{owner} must be a list of entries, not one string")
    queues = tuple(parse_queue(entry) for entry in entries)
    if not queues:
        raise ConfigurationError(f"{owner} must name at least one queue")
    return queues


def parse_queue(entry) -> tuple[str, int]:
    """Read `"name"`, `"name,weight"` or `("name", weight)` into `(name, weight)`."""
    if isinstance(entry, (tuple, list)) and len(entry) == 2:
        name, weight = entry
    elif isinstance(entry, str):
        name, _, weight = entry.partition(",")
        weight = weight.strip() or 0
    else:
        raise ConfigurationError(
            f"queue entry {entry!r} must be 'name', 'name,weight' or ('name', weight)")
    name = str(name).strip()
    if not name:
        raise ConfigurationError(f"queue entry {entry!r} has an empty name")
    try:
        weight = int(weight)
    except (TypeError, ValueError):
        raise ConfigurationError(
            f"queue entry {entry!r}: the weight must be a whole number") from None
    if weight < 0:
        raise ConfigurationError(f"queue entry {entry!r}: the weight must not be negative")
    return name, weight


@dataclass(frozen=True)
class Capsule:
    """A set of processor threads sharing one queue list and fetch order."""

    name: str
    concurrency: int
    queues: tuple[tuple[str, int], ...]

    @property
    def mode(self) -> str:
        weights = {weight for _, weight in self.queues}
        if weights == {0}:
            return "strict"
        if weights == {1}:
            return "random"
        return "weighted"

    @property
    def queue_names(self) -> list[str]:
        return list(dict.fromkeys(name for name, _ in self.queues))

    @property
    def weights(self) -> dict[str, int]:
        """Weights as configured, 0 for none, as Sidekiq reports them in `info`."""
        return {name: weight for name, weight in self.queues}

    def info(self) -> dict:
        return {"concurrency": self.concurrency, "mode": self.mode, "weights": self.weights}


def _default_tag() -> str:
    return os.path.basename(os.getcwd())


def _default_redis_url() -> str:
    return os.environ.get("REDIS_URL") or DEFAULT_REDIS_URL


# Numeric fields and their bounds (seconds must also be finite).
_WHOLE_NUMBERS = {"concurrency": 1, "max_retries": 0, "dead_max_jobs": 1,
                  "dead_timeout_in_seconds": 1}
_SECONDS_AT_LEAST_0 = ("shutdown_timeout_s", "average_scheduled_poll_interval_s")
_SECONDS_ABOVE_0 = ("heartbeat_interval_s", "reaper_interval_s", "network_timeout_s",
                    "leader_ttl_s", "leader_renew_s", "leader_retry_s", "cron_tick_s")


def _keep_lines(lines: list[str]) -> list[str]:
    return lines


def _run_directly(run: Callable[[], Any]) -> Any:
    return run()


JOB_FAILURE_CONTEXT = "Job raised exception"
_notices: dict[str, NoticeThrottle] = {}


def default_error_handler(exc: BaseException, context: dict, config: "Config") -> None:
    """Log job failures at INFO (retries book them; they are the job's business) and
    everything else at WARNING, at most a few lines a minute per kind; the traceback
    only when verbose or DEBUG is on."""
    summary = {k: v for k, v in context.items() if k not in ("job", "jobstr")}
    detailed = config.verbose or logger.isEnabledFor(logging.DEBUG)
    kind = str(context.get("context", ""))
    if kind == JOB_FAILURE_CONTEXT:
        logger.info("%s: %s %s", type(exc).__name__, exc, summary or "",
                    exc_info=exc if detailed else None)
        return
    throttle = _notices.get(kind) or _notices.setdefault(kind, NoticeThrottle())
    throttle.warn("%s: %s %s", type(exc).__name__, exc, summary or "",
                  exc_info=exc if detailed else None)


@dataclass(frozen=True)
class Config:
    """Everything a client or worker needs; build once, pass explicitly.

    Hook lists (error, death, lifecycle) and middleware chains stay mutable until a
    launcher starts and seals the config.
    """

    redis_url: str = field(default_factory=_default_redis_url)
    redis_options: Mapping[str, Any] = field(default_factory=dict)
    concurrency: int = 5
    queues: tuple = ("default",)
    capsules: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    shutdown_timeout_s: float = 25
    poll_interval_average_s: float | None = None
    average_scheduled_poll_interval_s: float = 5
    heartbeat_interval_s: float = 10
    reaper_interval_s: float = 60
    max_retries: int = 25
    dead_max_jobs: int = 10_000
    dead_timeout_in_seconds: int = 15_552_000
    on_complex_arguments: Any = "raise"
    default_job_options: Mapping[str, Any] = field(
        default_factory=lambda: dict(DEFAULT_JOB_OPTIONS))
    error_handlers: list = field(default_factory=lambda: [default_error_handler])
    death_handlers: list = field(default_factory=list)
    lifecycle_events: dict = field(default_factory=lambda: {e: [] for e in LIFECYCLE_EVENTS})
    backtrace_cleaner: Callable[[list[str]], list[str]] = _keep_lines
    logged_job_attributes: tuple = ("bid", "tags")
    labels: frozenset = frozenset()
    tag: str = field(default_factory=_default_tag)
    skip_default_job_logging: bool = False
    verbose: bool = False
    fetch: str = "reliable"
    reloader: Callable[[Callable[[], Any]], Any] = _run_directly
    client_middleware: Chain = field(default_factory=Chain)
    server_middleware: Chain = field(default_factory=Chain)
    embedded: bool = False
    redis_pool_size: int | None = None
    # `(push, transactional) -> bool`: may hold a push until commit; True if it did.
    push_deferrer: Callable[[Callable[[], Any], Any], bool] | None = None
    network_timeout_s: float = 5.0
    # Cluster leadership and periodic jobs (Sidekiq Enterprise's); short values are for tests.
    leader_ttl_s: float = 30
    leader_renew_s: float = 15
    leader_retry_s: float = 60
    cron_tick_s: float = 60
    cron_tz: str = ""
    cron_entries: tuple = ()
    # "ms" (Sidekiq 8's integer milliseconds) or "float" (seconds, for Sidekiq 6/7 fleets).
    timestamp_format: str = "ms"
    # Job guarantees. Reliable push: {"buffer": n, "overflow": "drop_oldest" | "raise"}, or
    # None (off). Encryption: {"active_version": n, "key_resolver": fn or its import path}.
    reliable_push: Any = None
    reliable_scheduler: bool = True  # promote due jobs with one script per batch
    encryption: Any = None
    # Metrics and tracing; core/observability.py checks them and installs what they ask for.
    metrics_port: int | None = None  # this worker's Prometheus port (plus process_slot)
    metrics_address: str = "0.0.0.0"
    process_slot: int = 0  # which of a supervisor's children this process is
    statsd: Any = None  # a zero-argument factory of a statsd client, or its import path
    statsd_job_metrics: bool = False
    statsd_options: Any = None  # (klass, job, queue) -> {"tags": [...], "sample_rate": r}
    opentelemetry: bool = False
    retain_history_s: float | None = None  # seconds between history snapshots; None: off
    history_collector: Any = None  # fn(statsd client) sent each snapshot instead of the gauges
    # The worker's health probes (core/health_port.py), GET /live and /ready; None: off.
    health_port: int | None = None
    health_address: str = "0.0.0.0"

    if TYPE_CHECKING:
        # Derived by __post_init__ (object.__setattr__): per instance, but not dataclass
        # fields (no argument, not compared). ClassVar keeps the type checker's dataclass
        # model from taking them for fields.
        _sealed: ClassVar[bool]
        def job_clock(self) -> float: ...  # now, in the timestamp format
        capsules_: ClassVar[tuple[Capsule, ...]]

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "_sealed", False)
        self._check_numbers()
        check.listen_port("health_port", self.health_port)
        check.listen_address("health_address", self.health_address)
        check.one_of("on_complex_arguments", self.on_complex_arguments, ("raise", "warn", False),
                     "'raise', 'warn' or False")
        check.one_of("fetch", self.fetch, FETCH_MODES, f"one of {FETCH_MODES}")
        check.one_of("timestamp_format", self.timestamp_format, TIMESTAMP_FORMATS,
                     "'ms' (Sidekiq 8) or 'float' (Sidekiq 6 and 7)")
        # Called for every job timestamp Wurk writes: created_at, enqueued_at, failed_at...
        set_(self, "job_clock", timestamp_clock(self.timestamp_format))
        check.redis_url(self.redis_url)
        set_(self, "redis_options", check.redis_options(self.redis_url, self.redis_options))
        with check.blame("queues"):
            set_(self, "queues", parse_queues(self.queues))
        set_(self, "labels", frozenset(check.names("labels", self.labels)))
        set_(self, "logged_job_attributes",
             check.names("logged_job_attributes", self.logged_job_attributes))
        for name in ("verbose", "skip_default_job_logging", "embedded", "reliable_scheduler"):
            check.one_of(name, getattr(self, name), (True, False), "True or False")
        set_(self, "reliable_push", check.reliable_push(self.reliable_push))
        set_(self, "encryption", check.encryption(self.encryption))
        if not isinstance(self.tag, str):
            raise ConfigurationError(f"tag must be a string, got {self.tag!r}", field="tag")
        set_(self, "default_job_options", self._checked_job_options())
        with check.blame("capsules"):
            set_(self, "capsules_", self._build_capsules())
        self._check_periodic()
        from .observability import configure
        configure(self)

    def _check_numbers(self) -> None:
        for name, minimum in _WHOLE_NUMBERS.items():
            check.whole(name, getattr(self, name), minimum)
        check.whole("redis_pool_size", self.redis_pool_size, 1, optional=True)
        for name in _SECONDS_AT_LEAST_0:
            check.number(name, getattr(self, name), positive=False)
        check.number("poll_interval_average_s", self.poll_interval_average_s, positive=False,
                      optional=True)
        for name in _SECONDS_ABOVE_0:
            check.number(name, getattr(self, name), positive=True)
        if self.leader_renew_s >= self.leader_ttl_s:
            raise ConfigurationError(
                f"leader_renew_s ({self.leader_renew_s}) must be shorter than leader_ttl_s "
                f"({self.leader_ttl_s}), or leadership lapses between renewals",
                field="leader_renew_s")
        if self.heartbeat_interval_s > PROCESS_TTL_S / 2:
            # The identity hash lives 60 s after each beat. Beats further apart let it
            # expire while the process runs (or after one slow beat): it vanishes from
            # the dashboard and other hosts' reapers take the jobs it is still running.
            raise ConfigurationError(
                f"heartbeat_interval_s ({self.heartbeat_interval_s}) must be at most "
                f"{PROCESS_TTL_S // 2} s, half the {PROCESS_TTL_S} s a process's heartbeat "
                f"entry lives", field="heartbeat_interval_s")

    def _checked_job_options(self) -> dict:
        from . import options
        if not isinstance(self.default_job_options, Mapping):
            raise ConfigurationError(f"default_job_options must be a dict, got "
                                     f"{self.default_job_options!r:.100}",
                                     field="default_job_options")
        merged = {**DEFAULT_JOB_OPTIONS, **self.default_job_options}
        if not str(merged.get("queue") or ""):
            raise ConfigurationError("default_job_options must name a non-empty queue",
                                     field="default_job_options")
        with check.blame("default_job_options"):
            return options.normalize(merged, "default_job_options", options.DEFAULTS)

    def _check_periodic(self) -> None:
        with check.blame("cron_tz"):
            zone_for(self.cron_tz)
        if isinstance(self.cron_entries, (str, Mapping)) or \
                not isinstance(self.cron_entries, (list, tuple)):
            raise ConfigurationError("cron_entries must be a list of entries",
                                     field="cron_entries")
        object.__setattr__(self, "cron_entries", tuple(self.cron_entries))
        with check.blame("cron_entries"):
            for index, entry in enumerate(self.cron_entries):
                check_entry(entry, entry_label(index, entry), self.cron_tz)

    def _build_capsules(self) -> tuple[Capsule, ...]:
        capsules = [Capsule("default", self.concurrency, self.queues)]
        if not isinstance(self.capsules, Mapping):
            raise ConfigurationError("capsules must be a dict of name -> "
                                     "{'concurrency': n, 'queues': [...]}")
        for name, spec in self.capsules.items():
            if name == "default":
                raise ConfigurationError("the capsule name 'default' is taken by the main queues")
            if not isinstance(spec, Mapping) or "queues" not in spec:
                raise ConfigurationError(f"capsule {name!r} needs a 'queues' list")
            concurrency = spec.get("concurrency", 1)
            if isinstance(concurrency, bool) or not isinstance(concurrency, int) \
                    or concurrency < 1:
                raise ConfigurationError(f"capsule {name!r} concurrency must be a whole "
                                         f"number >= 1, got {concurrency!r}")
            queues = parse_queues(spec["queues"], f"capsule {name!r}")
            capsules.append(Capsule(name, concurrency, queues))
        return tuple(capsules)

    @classmethod
    def from_url(cls, url: str, **options: Any) -> "Config":
        return cls(redis_url=url, **options)

    def replace(self, **changes: Any) -> "Config":
        """Return a copy with `changes`; `default_job_options` merges, as Sidekiq's does.

        The copy gets its own hook lists and chains: a launcher seals the copy it runs,
        and hooks added to the original later must not reach into it.
        """
        changes["default_job_options"] = {**self.default_job_options,
                                          **changes.get("default_job_options", {})}
        changes.setdefault("error_handlers", list(self.error_handlers))
        changes.setdefault("death_handlers", list(self.death_handlers))
        changes.setdefault("lifecycle_events",
                           {event: list(hs) for event, hs in self.lifecycle_events.items()})
        changes.setdefault("client_middleware", self.client_middleware.copy())
        changes.setdefault("server_middleware", self.server_middleware.copy())
        return dataclasses.replace(self, **changes)

    @property
    def total_concurrency(self) -> int:
        return sum(c.concurrency for c in self.capsules_)

    def unroutable_queues(self) -> list[str]:
        """Queue names the Sidekiq web UI could not link to (a warning, not an error)."""
        names = [n for c in self.capsules_ for n in c.queue_names]
        return [n for n in names if not ROUTABLE_QUEUE.match(n)]

    # --- hooks ------------------------------------------------------------------

    @property
    def sealed(self) -> bool:
        """True once a launcher runs with this config (hooks can no longer be added)."""
        return self._sealed

    def seal(self) -> None:
        object.__setattr__(self, "_sealed", True)

    def _check_open(self) -> None:
        if self._sealed:
            raise ConfigurationError("the config is in use by a running launcher; "
                                     "register hooks before it starts")

    def on(self, event: str, handler: Callable[[], Any]) -> None:
        """Register a lifecycle handler (startup, quiet, shutdown, exit, heartbeat, beat)."""
        if event not in LIFECYCLE_EVENTS:
            raise ConfigurationError(f"unknown lifecycle event {event!r}; "
                                     f"expected one of {', '.join(LIFECYCLE_EVENTS)}")
        self._check_open()
        self.lifecycle_events[event].append(handler)

    def fire_event(self, event: str, *, reverse: bool = False, reraise: bool = False) -> None:
        handlers = list(self.lifecycle_events[event])
        if reverse:
            handlers.reverse()
        for handler in handlers:
            try:
                handler()
            except Exception as exc:
                self.handle_exception(exc, {"context": f"Exception during Wurk lifecycle "
                                                       f"event {event}"})
                if reraise:
                    raise
        if event in ONE_SHOT_EVENTS:
            self.lifecycle_events[event].clear()

    def handle_exception(self, exc: BaseException, context: dict) -> None:
        """Report to every error handler; a failing handler is logged, never raised."""
        for handler in self.error_handlers:
            try:
                handler(exc, context, self)
            except Exception:
                logger.exception("!!! ERROR HANDLER THREW AN ERROR !!!")


LOG_FORMATS = ("text", "json")


@dataclass(frozen=True)
class ProcessOptions:
    """How a worker command runs its processes: how many to fork (a number, a fraction
    rounded half up, or "auto": one per usable CPU, core/sizing.py), the memory past
    which one is replaced, and the log line format."""

    processes: int | float | str = 1
    max_memory_mb: float | None = None
    log_format: str = "text"

    if TYPE_CHECKING:
        sizing_note: ClassVar[str]  # set by __post_init__, as Config's derived attributes

    def __post_init__(self) -> None:
        count, note = sizing.process_count(self.processes)
        object.__setattr__(self, "processes", count)
        object.__setattr__(self, "sizing_note", note)  # how the count was reached, or ""
        # 0 or less would replace every child as soon as it starts, forever.
        check.number("max_memory_mb", self.max_memory_mb, positive=True, optional=True,
                     unit="megabytes")
        check.one_of("log_format", self.log_format, LOG_FORMATS, "'text' or 'json'")


_default_config: Config | None = None
_default_lock = threading.Lock()


_default_factory: Callable[[], Config] = Config


def get_default_config() -> Config:
    """The config pushes use when none is passed, built by the factory on first use."""
    global _default_config
    with _default_lock:
        if _default_config is None:
            _default_config = _default_factory()
        return _default_config


def set_default_config(config: Config | None) -> None:
    """Install the process-wide config; None rebuilds it from the factory on next use."""
    global _default_config
    with _default_lock:
        _default_config = config


def set_default_config_factory(factory: Callable[[], Config]) -> None:
    """Build the default config lazily (the Django app reads its settings only when a
    push or a worker first needs them, never at import)."""
    global _default_config, _default_factory
    with _default_lock:
        _default_factory = factory
        _default_config = None
