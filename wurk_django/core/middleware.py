"""Client and server middleware chains: ordered entries, a fresh instance per call."""

from collections.abc import Callable
from typing import Any


class Chain:
    """An ordered list of `(cls, args, kwargs)`; entry 0 is the outermost."""

    def __init__(self, entries=()):
        self._entries: list[tuple[type, tuple, dict]] = list(entries)

    @property
    def entries(self) -> list[tuple[type, tuple, dict]]:
        return list(self._entries)

    def _index(self, cls: type) -> int | None:
        for index, (existing, _, _) in enumerate(self._entries):
            if existing is cls:
                return index
        return None

    def add(self, cls: type, *args, **kwargs) -> None:
        self.remove(cls)
        self._entries.append((cls, args, kwargs))

    def prepend(self, cls: type, *args, **kwargs) -> None:
        self.remove(cls)
        self._entries.insert(0, (cls, args, kwargs))

    def insert_before(self, old: type, cls: type, *args, **kwargs) -> None:
        self.remove(cls)
        index = self._index(old)
        self._entries.insert(0 if index is None else index, (cls, args, kwargs))

    def insert_after(self, old: type, cls: type, *args, **kwargs) -> None:
        self.remove(cls)
        index = self._index(old)
        position = len(self._entries) if index is None else index + 1
        self._entries.insert(position, (cls, args, kwargs))

    def remove(self, cls: type) -> None:
        self._entries = [entry for entry in self._entries if entry[0] is not cls]

    def clear(self) -> None:
        self._entries.clear()

    def copy(self) -> "Chain":
        return Chain(self._entries)

    def __contains__(self, cls: type) -> bool:
        return self._index(cls) is not None

    def __len__(self) -> int:
        return len(self._entries)

    def __bool__(self) -> bool:
        # An empty chain is still a chain; truthiness must not read as "missing".
        return True

    def build(self, config=None) -> list[Any]:
        instances = []
        for cls, args, kwargs in self._entries:
            instance = cls(*args, **kwargs)
            if config is not None and hasattr(instance, "config"):
                instance.config = config
            instances.append(instance)
        return instances

    def invoke(self, config, call_args: tuple, final: Callable[[], Any]) -> Any:
        """Run `final` inside every middleware's `call(*call_args, next_)`."""
        if not self._entries:
            return final()
        instances = self.build(config)

        def step(index: int):
            if index == len(instances):
                return final()
            return instances[index].call(*call_args, lambda: step(index + 1))

        return step(0)
