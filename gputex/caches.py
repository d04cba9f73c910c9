"""Named caches of GPU objects held by a :class:`gputex.device.Session` (``session.cache(name)``):
pipelines (:mod:`gputex.kernels`), reused work and transfer buffers. No GPU import."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Cache"]


@dataclass
class Cache:
    """A named cache of GPU objects (pipelines, reusable buffers) with hit/miss counts."""

    name: str
    items: dict[Any, Any] = field(default_factory=dict)
    hits: int = 0
    misses: int = 0

    def get(self, key: Any, make: Callable[[], Any]) -> Any:
        """``items[key]``, made by ``make()`` the first time."""
        value = self.items.get(key)
        if value is None:
            self.misses += 1
            value = self.items[key] = make()
        else:
            self.hits += 1
        return value

    def peek(self, key: Any) -> Any:
        """``items[key]`` or None, without making it (not counted)."""
        return self.items.get(key)

    def put(self, key: Any, value: Any) -> None:
        self.items[key] = value

    def pop(self, key: Any) -> Any:
        return self.items.pop(key, None)

    def stats(self) -> dict[str, int]:
        return {"entries": len(self.items), "hits": self.hits, "misses": self.misses}
