"""Periodic jobs (cron loops) as stored in Redis (ent.md §2.3): list, detail, pause, run now.

The cron engine (`core/cron.py`) writes these keys; pause and resume go through its
manual operations (`core/cron_ops.py`), so resuming skips the occurrences missed
while paused. With no loops registered every read is simply empty.
"""

from .. import cron_ops, keys
from ..cron import HISTORY_CAP
from ..cron_ops import LoopInfo as Loop
from ..cron_ops import history_entry, loop_from_hash
from .base import ApiObject, WrongTypeError, text


class LoopSet(ApiObject):
    """The members of `periodic`; a lid is used as a key suffix only after SISMEMBER.

    A loop whose hash key holds another type is left out and described in `problems`.
    """

    def __init__(self, config=None):
        super().__init__(config)
        self.problems: list[str] = []

    def __iter__(self):
        lids = sorted(text(m) for m in self._read(self.redis.smembers, keys.PERIODIC))

        def build(pipe):
            for lid in lids:
                pipe.hgetall(keys.loop(lid))

        hashes = self._pipelined(build, partial=True) if lids else []
        self.problems = [str(found) for found in hashes if isinstance(found, WrongTypeError)]
        readable = [(lid, found) for lid, found in zip(lids, hashes)
                    if not isinstance(found, WrongTypeError)]
        # A lid without a hash was unregistered between the two reads: skipped.
        loops = [loop for loop in (loop_from_hash(*pair) for pair in readable) if loop]
        return iter(sorted(loops, key=lambda loop: (loop.klass, loop.lid)))

    @property
    def size(self) -> int:
        return int(self._read(self.redis.scard, keys.PERIODIC))

    def fetch(self, lid: str, *, with_history: bool = True) -> Loop | None:
        """The loop and its last 25 fires, newest first; None for an unknown lid."""
        if not isinstance(lid, str) or not self._read(self.redis.sismember, keys.PERIODIC, lid):
            return None

        def build(pipe):
            pipe.hgetall(keys.loop(lid))
            pipe.lrange(keys.loop_history(lid), 0, HISTORY_CAP - 1)

        fields, history = self._pipelined(build)
        loop = loop_from_hash(lid, fields)
        if loop is not None and with_history:
            loop.history = [entry for entry in map(history_entry, history) if entry]
        return loop

    def leader(self) -> str | None:
        """The identity of the process holding cluster leadership, if any."""
        return text(self._read(self.redis.get, keys.LEADER))

    def set_paused(self, lid: str, paused: bool) -> bool:
        """Pause or resume a loop; False for an unknown lid."""
        operation = cron_ops.pause if paused else cron_ops.unpause
        return bool(self._write(operation, self.connection, lid))

    def run_now(self, lid: str) -> str | None:
        """Push the loop's job once and record it as the loop's last fire, as
        `manage.py wurk_cron fire` does; the jid, or None for an unknown lid.

        Not wrapped in `_write`: its fail-over resend could push the job twice."""
        return cron_ops.fire(self.config, self.connection, lid)
