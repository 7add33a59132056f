"""Values worked out per key and kept for one store revision: the latest few keys only."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
T = TypeVar("T")


class ByRevision(Generic[K, T]):
    """A value per key (a set of readable spaces), valid while the store revision it was worked out
    at holds; at most ``size`` keys, the least recently asked dropped first."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._kept: OrderedDict[K, tuple[int, T]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K, revision: int, compute: Callable[[], T]) -> T:
        """The kept value of ``key`` at ``revision``, else ``compute()`` (outside the lock), kept."""
        with self._lock:
            kept = self._kept.get(key)
        if kept is not None and kept[0] == revision:
            return kept[1]
        value = compute()
        with self._lock:
            self._kept[key] = (revision, value)
            self._kept.move_to_end(key)
            while len(self._kept) > self.size:
                self._kept.popitem(last=False)
        return value
