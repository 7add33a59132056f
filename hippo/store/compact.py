"""``hippo compact``: a SQLite store made before float16 vectors (stop 56) rewritten to keep them,
and the pages that frees given back to the file system.

The rewrite is one transaction (a failure leaves the store as it was) and bumps the revision, so
the saved derived state is built again on the next open. ``VACUUM`` then copies the live pages
into a new file (it needs that much free disk for a moment) and replaces the old one atomically;
the WAL is truncated after it. Another process may keep the store open meanwhile: its writes wait
for the rewrite, and it reads and writes float16 from the next transaction on.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel

from hippo.errors import InvalidInput
from hippo.store.sqlite import SQLiteStore


class CompactResult(BaseModel):
    store: str
    vectors_halved: int  # rows rewritten from float32 to float16 (0: already float16)
    bytes_before: int  # the store's file and its WAL
    bytes_after: int
    revision: int
    seconds: float

    def summary(self) -> str:
        halved = (f"{self.vectors_halved} vectors rewritten at float16, revision {self.revision}"
                  if self.vectors_halved else "vectors already at float16")
        return (f"compacted {self.store}: {halved}; {self.bytes_before / 2**20:,.1f} MB -> "
                f"{self.bytes_after / 2**20:,.1f} MB in {self.seconds:.1f}s")


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in (path, Path(f"{path}-wal")) if p.exists())


def compact(store: SQLiteStore, *, progress: Callable[[int, int], None] | None = None) -> CompactResult:
    clock = time.perf_counter()
    path = Path(store.url)
    before = _size(path)
    halved = store.halve_vectors(progress)
    store.vacuum()
    return CompactResult(store=store.url, vectors_halved=halved, bytes_before=before, bytes_after=_size(path),
                         revision=store.revision(), seconds=round(time.perf_counter() - clock, 3))


def compact_url(url: str | None, *, progress: Callable[[int, int], None] | None = None) -> CompactResult:
    """Open the store at ``url`` (default ``HIPPO_STORE``) and compact it; a Neo4j URL is refused (Neo4j
    keeps float32 vectors: its vector indexes read them)."""
    from hippo.config import Settings

    url = url or Settings().store
    if url == ":memory:" or ("://" in url and not url.startswith("sqlite://")):
        raise InvalidInput("store", f"hippo compact rewrites a SQLite store file, not {url!r} (a Neo4j store keeps "
                                    "float32 vectors for its vector indexes)")
    path = url.removeprefix("sqlite://")
    if not Path(path).is_file():
        raise InvalidInput("store", f"no SQLite store at {path}")
    store = SQLiteStore(path)
    try:
        return compact(store, progress=progress)
    finally:
        store.close()
