"""The Redis server itself: the five INFO fields Sidekiq's dashboard shows, and a probe."""

import time

from .. import keys
from .base import ApiObject

INFO_FIELDS = ("redis_version", "uptime_in_days", "connected_clients", "used_memory_human",
               "used_memory_peak_human")


class RedisServer(ApiObject):
    def info(self) -> dict:
        """Sidekiq's five INFO fields (Valkey reports its version separately) and the time."""
        info = self._read(self.redis.info)
        shown = {name: info.get(name) for name in INFO_FIELDS}
        if info.get("valkey_version"):
            shown["valkey_version"] = info["valkey_version"]
        seconds, micros = self._read(self.redis.time)
        shown["server_time_ms"] = int(seconds) * 1000 + int(micros) // 1000
        return shown

    def probe(self) -> float:
        """One LLEN, as Sidekiq's `HEAD /` does; the round trip in seconds.

        Raises RedisUnavailableError when Redis cannot be reached.
        """
        started = time.monotonic()
        self._read(self.redis.llen, keys.queue("default"))
        return time.monotonic() - started
