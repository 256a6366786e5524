"""Live worker processes and the jobs they are running; remote quiet, stop and thread dumps."""

from dataclasses import dataclass
from datetime import datetime

from .. import keys
from ..errors import WurkError
from ..heartbeat import PROCESS_TTL_S, REMOTE_SIGNALS, cleanup_processes
from ..payload import dumps, loads, to_datetime
from .base import ApiObject, WrongTypeError, text
from .records import JobRecord

HEARTBEAT_FIELDS = ("info", "busy", "beat", "quiet", "rss", "rtt_us")


class EmbeddedProcessError(WurkError):
    """Quiet and stop do not apply to a worker embedded in another process."""


class Process:
    """One process as its last heartbeat described it."""

    def __init__(self, api: ApiObject, identity: str, info: dict, busy, beat, quiet, rss,
                 rtt_us):
        self._api = api
        self.identity = identity
        self.info = info
        self.busy = _int(busy)
        self.beat = _float(beat)
        # `quiet` is the action (Sidekiq's `quiet!`); the heartbeat's flag is `is_quiet`.
        self.is_quiet = text(quiet) == "true"
        self.rss = _int(rss)
        self.rtt_us = _int(rtt_us)

    def __repr__(self) -> str:
        return f"<Process {self.identity} busy={self.busy} quiet={self.is_quiet}>"

    @property
    def hostname(self) -> str | None:
        return self.info.get("hostname")

    @property
    def pid(self) -> int | None:
        return self.info.get("pid")

    @property
    def tag(self) -> str | None:
        return self.info.get("tag")

    @property
    def labels(self) -> list[str]:
        return list(self.info.get("labels") or [])

    @property
    def queues(self) -> list[str]:
        return list(self.info.get("queues") or [])

    @property
    def weights(self) -> list:
        return list(self.info.get("weights") or [])

    @property
    def capsules(self) -> dict:
        return dict(self.info.get("capsules") or {})

    @property
    def concurrency(self) -> int:
        return _int(self.info.get("concurrency"))

    @property
    def started_at(self) -> datetime | None:
        return to_datetime(self.info.get("started_at"))

    @property
    def beat_at(self) -> datetime | None:
        return to_datetime(self.beat) if self.beat else None

    @property
    def version(self) -> str | None:
        return self.info.get("version")

    @property
    def embedded(self) -> bool:
        return bool(self.info.get("embedded"))

    @property
    def stopping(self) -> bool:
        """True once the process is quiet or shutting down."""
        return self.is_quiet

    def quiet(self) -> None:
        """Ask the process to stop fetching new jobs (TSTP) on its next heartbeat."""
        self._refuse_embedded("quiet")
        self.signal("TSTP")

    def stop(self) -> None:
        """Ask the process to shut down gracefully (TERM) on its next heartbeat."""
        self._refuse_embedded("stop")
        self.signal("TERM")

    def dump_threads(self) -> None:
        """Ask the process to log every thread's stack (TTIN) on its next heartbeat."""
        self.signal("TTIN")

    def signal(self, name: str) -> None:
        """LPUSH a signal name and refresh the list's TTL, in one MULTI."""
        if name not in REMOTE_SIGNALS:
            raise ValueError(f"unknown signal {name!r}; expected one of {REMOTE_SIGNALS}")
        key = keys.signals(self.identity)

        def build(pipe):
            pipe.lpush(key, name)
            pipe.expire(key, PROCESS_TTL_S)

        self._api._pipelined(build, transaction=True, write=True)

    def _refuse_embedded(self, action: str) -> None:
        # Sidekiq refuses too: the host process (a web server) owns the worker's lifecycle.
        if self.embedded:
            raise EmbeddedProcessError(f"cannot {action} embedded process {self.identity}")


class ProcessSet(ApiObject):
    """The live processes: members of `processes` whose identity hash still has `info`.

    Building one never prunes dead members (a read-only dashboard must not write);
    call `cleanup()` for that. A member whose key is not a hash (another tool's data)
    is left out and described in `problems`.
    """

    def __init__(self, config=None):
        super().__init__(config)
        self.problems: list[str] = []

    def __iter__(self):
        identities = self._members()

        def build(pipe):
            for identity in identities:
                pipe.hmget(identity, *HEARTBEAT_FIELDS)

        replies = self._pipelined(build, partial=True) if identities else []
        self.problems = [str(reply) for reply in replies if isinstance(reply, WrongTypeError)]
        for identity, reply in zip(identities, replies):
            if isinstance(reply, WrongTypeError):
                continue
            info, *state = reply
            # No info: the process died (TTL) or stopped between SSCAN and HMGET.
            parsed = _json_object(info)
            if parsed is not None:
                yield Process(self, identity, parsed, *state)

    def _members(self) -> list[str]:
        return self._set_members(keys.PROCESSES)

    def get(self, identity: str) -> Process | None:
        """The live process with this identity, or None."""
        def build(pipe):
            pipe.sismember(keys.PROCESSES, identity)
            pipe.hmget(identity, *HEARTBEAT_FIELDS)

        member, (info, *state) = self._pipelined(build, transaction=True)
        parsed = _json_object(info) if member else None
        return None if parsed is None else Process(self, identity, parsed, *state)

    @property
    def size(self) -> int:
        """Members of `processes`, dead ones not yet cleaned up included."""
        return int(self._read(self.redis.scard, keys.PROCESSES))

    def cleanup(self) -> int:
        """Prune members whose heartbeat expired; at most once a minute cluster-wide."""
        return self._write(cleanup_processes, self.connection)

    @property
    def total_concurrency(self) -> int:
        return sum(process.concurrency for process in self)

    @property
    def total_rss(self) -> int:
        """Resident memory of every live process, in KB."""
        return sum(process.rss for process in self)

    def quiet_all(self) -> int:
        """Quiet every live process that is not embedded; returns how many were told."""
        return self._signal_all(Process.quiet)

    def stop_all(self) -> int:
        return self._signal_all(Process.stop)

    def _signal_all(self, action) -> int:
        targets = [process for process in self if not process.embedded]
        for process in targets:
            action(process)
        return len(targets)


@dataclass
class Work:
    """A job a process is running now, from its `<identity>:work` hash."""

    identity: str
    tid: str
    queue: str | None
    payload: dict | None
    run_at: datetime | None
    job: JobRecord


class Workers(ApiObject):
    """The jobs running across live processes, oldest start first.

    A snapshot up to one heartbeat old: each process rewrites its work hash per beat.
    Keys of the wrong type are skipped and described in `problems`.
    """

    def __init__(self, config=None):
        super().__init__(config)
        self.problems: list[str] = []

    def __iter__(self):
        identities = ProcessSet(self.config)._members()

        def build(pipe):
            for identity in identities:
                pipe.hget(identity, "info")
                pipe.hgetall(keys.work(identity))

        replies = self._pipelined(build, partial=True) if identities else []
        self.problems = [str(reply) for reply in replies if isinstance(reply, WrongTypeError)]
        works = []
        for index, identity in enumerate(identities):
            info, threads = replies[2 * index], replies[2 * index + 1]
            if info is None or any(isinstance(r, WrongTypeError) for r in (info, threads)):
                continue  # a dead process's work hash lingers until its TTL
            for tid, value in threads.items():
                work = _work(identity, text(tid), value)
                if work is not None:
                    works.append(work)
        works.sort(key=lambda work: work.run_at.timestamp() if work.run_at else 0.0)
        return iter([(work.identity, work.tid, work) for work in works])

    @property
    def size(self) -> int:
        """Busy threads across the processes, from each heartbeat's `busy` field."""
        identities = ProcessSet(self.config)._members()

        def build(pipe):
            for identity in identities:
                pipe.hget(identity, "busy")

        replies = self._pipelined(build, partial=True) if identities else []
        return sum(_int(busy) for busy in replies if not isinstance(busy, WrongTypeError))

    def find_work(self, jid: str) -> Work | None:
        for _, _, work in self:
            if work.job.jid == jid:
                return work
        return None


def _work(identity: str, tid: str, value) -> Work | None:
    entry = _json_object(value)
    if entry is None:
        return None
    payload = entry.get("payload")
    # Sidekiq nests the payload as a JSON string; accept an object there too.
    if payload is None or isinstance(payload, (str, bytes)):
        raw = payload or b""
    else:
        raw = dumps(payload)
    job = JobRecord(raw, entry.get("queue"))
    return Work(identity, tid, entry.get("queue"), job.item, to_datetime(entry.get("run_at")),
                job)


def _json_object(value) -> dict | None:
    if value is None:
        return None
    try:
        parsed = loads(value)
    except (ValueError, UnicodeDecodeError):
        return None
    return parsed if isinstance(parsed, dict) else None


def _int(value) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def _float(value) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0
