"""Periodic jobs (cron loops) as stored in Redis (ent.md §2.3): list, detail, pause, run now.

The cron engine (`core/cron.py`) writes these keys; pause and resume go through its
manual operations (`core/cron_ops.py`), so resuming skips the occurrences missed
while paused. With no loops registered every read is simply empty.
"""

from .. import cron_ops, keys
from ..client import Client
from ..cron import HISTORY_CAP, push_item
from ..cron_ops import LoopInfo as Loop
from ..cron_ops import history_entry, loop_from_hash
from .base import ApiObject, text


class LoopSet(ApiObject):
    """The members of `periodic`; a lid is used as a key suffix only after SISMEMBER."""

    def __iter__(self):
        lids = sorted(text(m) for m in self._read(self.redis.smembers, keys.PERIODIC))

        def build(pipe):
            for lid in lids:
                pipe.hgetall(keys.loop(lid))

        hashes = self._pipelined(build) if lids else []
        # A lid without a hash was unregistered between the two reads: skipped.
        loops = [loop for loop in map(loop_from_hash, lids, hashes) if loop is not None]
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
        """Push the loop's job once, leaving its marks and history alone (spec §1.8);
        the jid, or None for an unknown lid."""
        loop = self.fetch(lid, with_history=False)
        if loop is None:
            return None
        return Client(self.config, self.connection).push(push_item(lid, loop.klass,
                                                                   loop.options))
