"""A growable matrix of unit vectors with their record ids (brute-force search).

Exact inner products over a contiguous float32 matrix are what faiss'
``IndexFlatIP`` does too; keeping the matrix lets recall score every passage
for the PPR prior in one product.
"""

from __future__ import annotations

import threading

import numpy as np


class VectorIndex:
    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.ids: list[str] = []
        self.hashes: list[str] = []
        self._blocks: list[np.ndarray] = []
        self._matrix = np.zeros((0, dim), dtype=np.float32)
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.ids)

    def add(self, ids: list[str], hashes: list[str], vectors: np.ndarray) -> None:
        if not ids:
            return
        if vectors.shape != (len(ids), self.dim):
            raise ValueError(f"expected {len(ids)} vectors of {self.dim} dims, got {vectors.shape}")
        self.ids.extend(ids)
        self.hashes.extend(hashes)
        self._blocks.append(np.ascontiguousarray(vectors, dtype=np.float32))

    @property
    def matrix(self) -> np.ndarray:
        if self._blocks:  # concatenate lazily: many small adds cost one copy
            with self._lock:  # concurrent readers must not concatenate the same blocks twice
                if self._blocks:
                    self._matrix = np.concatenate([self._matrix, *self._blocks])
                    self._blocks.clear()
        return self._matrix

    def scores(self, query: np.ndarray) -> np.ndarray:
        """Cosine similarity of every row with ``query`` (rows x queries if 2-D)."""
        return self.matrix @ query.T if query.ndim == 2 else self.matrix @ query
