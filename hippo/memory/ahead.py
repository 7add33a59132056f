"""Reads a store-side recall starts before it asks for them (``StoreSource.read_ahead``,
``search_ahead``): the keyword, title and vector reads of a recall's seed stage depend only on the
query's text and vectors, so they run at once on threads, and Neo4j answers them while the recall
goes on. Each is taken once, by the key it was started under; a read never started runs when taken.
An error in a read is raised where it is taken, as if it had run there.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")

# Up to six reads a recall, each a network wait (Neo4j) or a vector search that lets go of the GIL (in
# process): a few threads serve every recall of a process.
POOL = ThreadPoolExecutor(max_workers=8, thread_name_prefix="hippo-read-ahead")


class Ahead:
    """One recall's reads started ahead, by key."""

    def __init__(self) -> None:
        self._started: dict[Hashable, Future[Any]] = {}

    def start(self, key: Hashable, read: Callable[..., Any], *args: Any) -> None:
        self._started[key] = POOL.submit(read, *args)

    def take(self, key: Hashable, read: Callable[..., T], *args: Any) -> T:
        """The answer of the read started under ``key``, else ``read(*args)`` now."""
        started = self._started.pop(key, None)
        return started.result() if started is not None else read(*args)

    def later(self, read: Callable[..., T], *args: Any) -> Callable[[], T]:
        """``read(*args)`` started now on a thread; what this returns gives its answer when called."""
        key = object()
        self.start(key, read, *args)
        return lambda: self.take(key, read, *args)

    def settle(self) -> None:
        """Wait for every read started and not taken, and drop it (its error too)."""
        started, self._started = self._started, {}
        for future in started.values():
            future.exception()

    def __len__(self) -> int:
        return len(self._started)
