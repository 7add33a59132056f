"""An embedder that records what it is asked to encode, for tests of what indexing encodes."""

from __future__ import annotations

import threading

import numpy as np


class CountingEmbedder:
    """Wraps an embedder; ``texts`` lists every text encoded, in order, from any thread."""

    def __init__(self, inner, fail_after: int | None = None) -> None:
        self.inner, self.name, self.dim, self.backend = inner, inner.name, inner.dim, inner.backend
        self.texts: list[str] = []
        self.calls: list[str] = []  # the thread of each call
        self._fail_after = fail_after
        self._lock = threading.Lock()

    def encode(self, texts: list[str]) -> np.ndarray:
        with self._lock:
            self.calls.append(threading.current_thread().name)
            if self._fail_after is not None and len(self.calls) > self._fail_after:
                raise RuntimeError("the encoder broke")
            self.texts.extend(texts)
        return self.inner.encode(texts)
