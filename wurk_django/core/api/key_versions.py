"""Which encryption key versions stored jobs still need: every queue, every in-flight
list, `schedule`, `retry` and `dead` are read, and each encrypted argument counted by the
key version it was sealed with. An old key may go once no job counts it."""

from collections import Counter
from dataclasses import dataclass, field

from .. import keys
from ..encryption import MARKER, is_marked
from ..errors import WrongTypeError
from .base import CHUNK_SIZE, ApiObject
from .records import parse_job

_NEEDLE = MARKER.encode()


@dataclass
class KeyVersions:
    """`counts`: key version -> jobs sealed with it (a malformed envelope's version is
    counted as the text "malformed"); `scanned`: payloads read; `places`: where."""

    counts: Counter = field(default_factory=Counter)
    scanned: int = 0
    places: int = 0
    skipped: list = field(default_factory=list)  # keys of another type than expected

    def still_used(self, version) -> bool:
        return self.counts.get(version, 0) > 0


class KeyVersionScan(ApiObject):
    """Counts the key versions of every stored encrypted job (reads only)."""

    def run(self) -> KeyVersions:
        found = KeyVersions()
        for raw in self._payloads(found):
            found.scanned += 1
            if _NEEDLE in raw:
                version = _version(raw)
                if version is not None:
                    found.counts[version] += 1
        return found

    def _payloads(self, found: KeyVersions):
        connection = self.connection
        client = connection.client
        names = sorted(member.decode("utf-8", "replace")
                       for member in connection.read(client.smembers, keys.QUEUES))
        lists = [keys.queue(name) for name in names]
        lists += sorted(key.decode("utf-8", "replace")
                        for key in connection.scan(keys.QUEUE_PREFIX + "*|*"))
        for key in dict.fromkeys(lists):
            found.places += 1
            yield from self._chunks(client.lrange, key, found)
        for key in keys.SORTED_SETS:
            found.places += 1
            yield from self._chunks(client.zrange, key, found)

    def _chunks(self, command, key: str, found: KeyVersions):
        start = 0
        while True:
            try:
                chunk = self.connection.read(command, key, start, start + CHUNK_SIZE - 1)
            except WrongTypeError:
                found.skipped.append(key)
                return
            yield from chunk
            if len(chunk) < CHUNK_SIZE:
                return
            start += CHUNK_SIZE


def _version(raw: bytes):
    item = parse_job(raw)
    args = item.get("args") if item is not None else None
    if not isinstance(args, list) or not args or not is_marked(args[-1]):
        return None
    version = args[-1].get("v")
    if isinstance(version, int) and not isinstance(version, bool):
        return version
    return "malformed"
