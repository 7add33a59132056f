"""Encoding beside extraction: a batch's vectors are computed while its later passages are still read.

Indexing spends its time in two stages that use different resources: the
extractor (spaCy: one core, holding the GIL; an LLM: waiting on the network)
and the encoder (ONNX Runtime or torch: native code on every core, the GIL
released). Run one after the other, each leaves the other's resources idle.
``VectorPrefetch`` sends the texts of each extracted chunk (the passages at
once, their new entities and facts as each chunk comes back) to one
background thread that encodes them in order, so embedding ends soon after
extraction instead of starting there.

It is only a prefetch: ``collect`` hands back what it found and encoded, and
the caller still asks for every record it keeps (``embed_missing``), so a
text the prefetch never saw is encoded then, and one it encoded needlessly
is dropped. Vectors do not depend on which texts share a run (the ONNX
encoder batches only texts of equal token length; the int8 graph runs each
text alone), so chunking changes no vector.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from hippo.models import Entity, Fact, Passage
from hippo.store.base import Store, embed_hash, embed_text

Encode = Callable[[list[str]], np.ndarray]


@dataclass
class Prefetched:
    vectors: dict[str, np.ndarray]  # by text hash: read from the store or encoded here
    encoded: set[str]  # the hashes encoded here
    busy_s: float = 0.0  # the background thread's encoding time, overlapped or not


@dataclass
class _Job:
    hashes: list[str]
    future: Future[np.ndarray]


@dataclass
class VectorPrefetch:
    """Encodes records' texts on one background thread as they become known: each distinct text
    once, none whose vector the store already holds. Store reads stay on the caller's thread
    (an SQLite connection belongs to the thread that opened it)."""

    store: Store
    encode: Encode
    _seen: set[str] = field(default_factory=set)
    _found: dict[str, np.ndarray] = field(default_factory=dict)
    _jobs: list[_Job] = field(default_factory=list)
    _busy: list[float] = field(default_factory=list)
    _pool: ThreadPoolExecutor = field(
        default_factory=lambda: ThreadPoolExecutor(max_workers=1, thread_name_prefix="hippo-prefetch"))

    def submit(self, records: Iterable[Passage | Entity | Fact]) -> None:
        texts: dict[str, str] = {}
        for record in records:
            digest = embed_hash(record)
            if digest not in self._seen:
                texts[digest] = embed_text(record)
        if not texts:
            return
        self._seen.update(texts)
        self._found.update(self.store.vectors(texts))
        missing = sorted((h for h in texts if h not in self._found), key=lambda h: len(texts[h]))
        if missing:
            batch = [texts[h] for h in missing]
            self._jobs.append(_Job(missing, self._pool.submit(self._timed, batch)))

    def collect(self) -> Prefetched:
        """Everything found and encoded; raises what an encode raised. The thread is stopped either way."""
        try:
            vectors, encoded = dict(self._found), set()
            for job in self._jobs:
                vectors.update(zip(job.hashes, job.future.result(), strict=True))
                encoded.update(job.hashes)
            return Prefetched(vectors, encoded, busy_s=sum(self._busy))
        finally:
            self.close()

    def close(self) -> None:
        """Stop the thread; encodes still queued (the caller failed first) are dropped."""
        self._pool.shutdown(wait=True, cancel_futures=True)

    def _timed(self, texts: list[str]) -> np.ndarray:
        clock = time.perf_counter()
        try:
            return self.encode(texts)
        finally:
            self._busy.append(time.perf_counter() - clock)
