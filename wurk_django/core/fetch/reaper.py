"""The reaper: gives jobs in dead processes' private lists back to their queues."""

import logging
import os
import threading
from dataclasses import dataclass

from .. import keys, poison, statsd
from ..errors import InvalidJobError
from ..identity import hostname, process_nonce
from ..outage import OutageLog
from ..payload import decode_job
from ..redis import REDIS_ERRORS
from ..retry import send_to_dead
from ..timer_loop import TimerLoop

logger = logging.getLogger("wurk")

FULL_SWEEP_INTERVAL_S = 3600
SCAN_COUNT = 100
_GLOB_SPECIALS = "\\*?[]"


@dataclass(frozen=True)
class Owner:
    """Who wrote a private list: parsed from its key."""

    public_key: str
    host: str
    pid: int
    nonce: str | None


def _is_digits(text: str) -> bool:
    return text.isdigit()


def parse_private_key(key: str, known_prefix: str | None = None) -> Owner | None:
    """Read `queue:<q>|<host>|<pid>|<nonce>|<idx>` (or the older form without nonce)
    from the right, so a `|` inside the queue name is harmless.

    The 4-segment (wide) reading wins over the 3-segment one: an all-digit nonce read
    narrow would make the pid the host and drain a live owner.
    """
    if known_prefix is not None:
        if not key.startswith(known_prefix):
            return None
        parts = key[len(known_prefix):].split("|")
        readings = _readings(parts, min_public=0)
        for width, owner in readings:
            if len(parts) == width:
                return Owner(known_prefix[:-1], *owner)
        return None
    parts = key.split("|")
    for width, owner in _readings(parts, min_public=1):
        public = "|".join(parts[:-width])
        if public.startswith(keys.QUEUE_PREFIX) and len(public) > len(keys.QUEUE_PREFIX):
            return Owner(public, *owner)
    return None


def _readings(parts: list[str], min_public: int) -> list[tuple[int, tuple]]:
    if len(parts) < 3 or not _is_digits(parts[-1]):
        return []
    readings: list[tuple[int, tuple]] = []
    if len(parts) >= 4 + min_public and _is_digits(parts[-3]):
        readings.append((4, (parts[-4], int(parts[-3]), parts[-2])))
    if len(parts) >= 3 + min_public and _is_digits(parts[-2]):
        readings.append((3, (parts[-3], int(parts[-2]), None)))
    return readings


def escape_glob(text: str) -> str:
    return "".join("\\" + c if c in _GLOB_SPECIALS else c for c in text)


class LiveOwners:
    """One sweep's view of which processes are alive."""

    def __init__(self, connection):
        members = [m.decode() for m in connection.read(connection.client.smembers,
                                                       keys.PROCESSES)]
        pipe = connection.pipeline()
        for member in members:
            pipe.hget(member, "info")
        infos = pipe.execute() if members else []
        # Bare membership is not enough: a member outlives its 60 s hash.
        self.identities = {m for m, info in zip(members, infos) if info}
        self.host_pids = {m.rsplit(":", 1)[0] for m in self.identities}
        self.host = hostname()
        self.nonce = process_nonce()

    def alive(self, owner: Owner) -> bool:
        if owner.host == self.host and owner.nonce == self.nonce:
            # Our own process image, so our PID namespace: ask the OS.
            try:
                os.kill(owner.pid, 0)
            except ProcessLookupError:
                return False
            except PermissionError:
                return True
            return True
        if owner.nonce is None:
            return f"{owner.host}:{owner.pid}" in self.host_pids
        return f"{owner.host}:{owner.pid}:{owner.nonce}" in self.identities


class Reaper:
    """A boot sweep, a scoped sweep every interval under a lock, a full sweep hourly
    (by the leader only, when given a leadership check)."""

    def __init__(self, config, connection, queues: list[str], is_leader=None):
        self.config = config
        self.connection = connection
        self.queues = queues
        self._is_leader = is_leader or (lambda: True)  # gates the full sweep
        self._warned: set[str] = set()
        self._boot: threading.Thread | None = None
        self._outage = OutageLog("reaper", config)
        self._loop = TimerLoop("wurk-reaper", config.reaper_interval_s, self.tick,
                               on_error=self._report, outage=self._outage)

    def start(self) -> None:
        self._boot = threading.Thread(target=self._boot_sweep, name="wurk-reaper-boot",
                                      daemon=True)
        self._boot.start()
        self._loop.start()

    def stop(self) -> None:
        self._loop.stop()

    def _report(self, exc: BaseException) -> None:
        self.config.handle_exception(exc, {"context": "reaper"})

    def _boot_sweep(self) -> None:
        try:
            self.sweep_scoped()
        except REDIS_ERRORS as exc:
            self._outage.failed(exc)
        except Exception as exc:  # noqa: BLE001 - a failed boot sweep must not stop the boot
            self._report(exc)

    def tick(self) -> None:
        connection = self.connection
        set_ = connection.client.set
        if connection.write(set_, keys.REAPER_LOCK, "1", nx=True,
                            ex=max(int(self.config.reaper_interval_s), 1)):
            self.sweep_scoped()
        if self._is_leader() and connection.write(set_, keys.REAPER_FULL_LOCK, "1", nx=True,
                                                  ex=FULL_SWEEP_INTERVAL_S):
            self.sweep_full()

    def sweep_scoped(self) -> int:
        """Drain dead owners' lists of the queues this process serves."""
        owners = LiveOwners(self.connection)
        reclaimed = 0
        for queue in self.queues:
            prefix = keys.queue(queue) + "|"
            for raw_key in self._scan(escape_glob(prefix) + "*"):
                key = raw_key.decode("utf-8", "replace")
                owner = parse_private_key(key, known_prefix=prefix)
                if owner is not None and not owners.alive(owner):
                    reclaimed += self._drain_guarded(key, owner.public_key)
        return reclaimed

    def sweep_full(self) -> int:
        """Every `queue:*|*` key, for queues nobody serves any more."""
        owners = LiveOwners(self.connection)
        members = self.connection.read(self.connection.client.smembers, keys.QUEUES)
        known = {m.decode("utf-8", "replace") for m in members}
        reclaimed = 0
        for raw_key in self._scan(keys.QUEUE_PREFIX + "*|*"):
            key = raw_key.decode("utf-8", "replace")
            owner = parse_private_key(key)
            if owner is None:
                self._warn_unparseable(key, known)
            elif not owners.alive(owner):
                reclaimed += self._drain_guarded(key, owner.public_key)
        return reclaimed

    def _drain_guarded(self, private_key: str, public_key: str) -> int:
        """One list's trouble must not cost the others their sweep: report and go on.
        A Redis error ends the sweep, as every other list would fail the same way."""
        try:
            return self.drain(private_key, public_key)
        except REDIS_ERRORS:
            raise
        except Exception as exc:  # noqa: BLE001 - one list must not cost the others a sweep
            self.config.handle_exception(exc, {"context": f"reaper: draining {private_key}"})
            return 0

    def _scan(self, pattern: str):
        return self.connection.scan(pattern, count=SCAN_COUNT)

    def _warn_unparseable(self, key: str, known: set[str]) -> None:
        if key[len(keys.QUEUE_PREFIX):] in known or key in self._warned:
            return  # a public queue whose name has a `|` in it
        if len(self._warned) < 1000:
            self._warned.add(key)
            logger.warning("Cannot tell who owns %s (%d jobs); recover them by hand", key,
                           self.connection.read(self.connection.client.llen, key))

    def drain(self, private_key: str, public_key: str) -> int:
        """Give jobs back one at a time, oldest first, checking each for poison BEFORE it
        moves: once public, a fetcher parked in BLMOVE would take a pill at once.

        A crash between the check and the move leaves the job in the private list for
        the next sweep (at worst counted twice); nothing is lost. A payload that is not
        a job goes straight to `dead` with its bytes kept. Bounded by the list's length
        when the drain began, so no entry can hold the sweep in a loop.
        """
        moved = 0
        connection, client = self.connection, self.connection.client
        for _ in range(connection.read(client.llen, private_key)):
            raw = connection.read(client.lindex, private_key, -1)
            if raw is None:
                break
            moved += 1
            if self._settle(private_key, raw):
                continue
            # Not retried on a lost reply: a replay would move a second, unchecked job.
            if connection.write(client.lmove, private_key, public_key, "RIGHT",
                                "RIGHT") is None:
                break  # another sweep drained it meanwhile
            logger.info("Recovered a job from %s to %s", private_key, public_key)
            if self.config.statsd is not None:
                statsd.increment(self.config, "jobs.recovered.fetch",
                                 statsd.job_tags(raw, public_key[len(keys.QUEUE_PREFIX):]))
        return moved

    def _settle(self, private_key: str, raw: bytes) -> bool:
        """Deal with an entry that must not go back to its queue; True if it was taken."""
        try:
            job = decode_job(raw)
        except InvalidJobError as exc:
            self.config.handle_exception(exc, {"context": f"Invalid JSON in {private_key}; "
                                                          f"moved to the dead set",
                                               "jobstr": raw})
            send_to_dead(self.connection, self.config, raw)
            self.connection.write(self.connection.client.lrem, private_key, -1, raw)
            return True
        try:
            return poison.check_reclaimed(self.connection, self.config, raw, job, private_key)
        except REDIS_ERRORS:
            raise
        except Exception as exc:  # noqa: BLE001 - a bug in the check must not strand the job
            # Give it back unchecked.
            self.config.handle_exception(exc, {"context": "reaper: poison check failed",
                                               "jobstr": raw})
            return False
