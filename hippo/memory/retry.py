"""Optimistic writes against writers in other processes.

A write reads the versions it builds on and the store refuses it (``Conflict``)
when another process moved one in between; the writer then plans again. Retried
at once, writers that collided collide again: every retry waits a jittered,
exponentially growing backoff, and keeps trying until a deadline rather than
for a fixed count. A retry re-plans against the new state, but the extraction
and the embedding of its own text do not change: ``Reused`` keeps them.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator

import numpy as np

from hippo.extract.base import Extraction, Extractor
from hippo.models import Passage

WRITE_ATTEMPTS = 16  # attempts at least...
WRITE_DEADLINE = 30.0  # ...and then more until this many seconds have passed
BACKOFF_BASE = 0.01  # seconds: the first retry waits up to this, each later one up to twice as long
BACKOFF_CAP = 1.0


def conflict_backoff(attempt: int) -> float:
    """Seconds to wait before retrying a write that lost a race: exponential, with full jitter,
    so writers that collided once spread out instead of colliding again."""
    return random.uniform(0.0, min(BACKOFF_CAP, BACKOFF_BASE * 2 ** attempt))


def write_attempts(at_least: int = WRITE_ATTEMPTS, deadline: float = WRITE_DEADLINE) -> Iterator[int]:
    """Attempt numbers for an optimistic write: ``at_least`` of them, then more until ``deadline``
    seconds have passed, with a ``conflict_backoff`` sleep before each retry."""
    start, attempt = time.monotonic(), 0
    while attempt < at_least or time.monotonic() - start < deadline:
        if attempt:
            time.sleep(conflict_backoff(attempt))
        yield attempt
        attempt += 1


class Reused:
    """An extractor and an encoder that keep their answers across the attempts of one write:
    a retry re-plans against the new state without paying for spaCy and the embedding again."""

    def __init__(self, extractor: Extractor, encode: Callable[[list[str]], np.ndarray]) -> None:
        self.name = extractor.name
        self._extractor, self._encode = extractor, encode
        self._extractions: dict[str, Extraction] = {}
        self._vectors: dict[str, np.ndarray] = {}

    def extract(self, passages: list[Passage]) -> list[Extraction]:
        missing = [p for p in passages if p.text not in self._extractions]
        if missing:
            self._extractions.update(zip((p.text for p in missing), self._extractor.extract(missing), strict=True))
        return [self._extractions[p.text] for p in passages]

    def encode(self, texts: list[str]) -> np.ndarray:
        missing = list(dict.fromkeys(t for t in texts if t not in self._vectors))
        if missing:
            self._vectors.update(zip(missing, self._encode(missing), strict=True))
        return np.stack([self._vectors[t] for t in texts]) if texts else np.zeros((0, 0), dtype=np.float32)
