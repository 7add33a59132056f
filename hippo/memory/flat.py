"""A space's vectors of one kind while few: a float32 matrix scored exactly (what faiss'
``IndexFlatIP`` does), up to ``AnnSettings.exact_max`` rows (``hippo.memory.shards`` for more)."""

from __future__ import annotations

import numpy as np

from hippo.columns import Column
from hippo.memory.ann import Gather


def top_k(scores: np.ndarray, labels: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The k best (scores, labels) of one query, best first; ties by label."""
    if len(scores) > k:
        head = np.argpartition(-scores, k - 1)[:k]
        scores, labels = scores[head], labels[head]
    order = np.lexsort((labels, -scores))
    return scores[order], labels[order]


class FlatShard:
    kind = "flat"

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.labels = Column(np.int64)
        self._matrix = np.zeros((16, dim), dtype=np.float32)
        self._position: dict[int, int] = {}

    def __len__(self) -> int:
        return len(self.labels)

    @property
    def matrix(self) -> np.ndarray:
        return self._matrix[: len(self.labels)]

    def add(self, labels: np.ndarray, vectors: np.ndarray) -> None:
        fresh = [i for i, label in enumerate(labels.tolist()) if label not in self._position]
        if not fresh:
            return
        labels, vectors = labels[fresh], vectors[fresh]
        n = len(self.labels)
        if n + len(labels) > len(self._matrix):
            grown = np.zeros((max(n + len(labels), 2 * len(self._matrix)), self.dim), dtype=np.float32)
            grown[:n] = self._matrix[:n]
            self._matrix = grown
        self._matrix[n : n + len(labels)] = vectors
        self.labels.append(labels)
        self._position.update((label, n + i) for i, label in enumerate(labels.tolist()))

    def positions(self, labels: np.ndarray) -> np.ndarray:
        """Each label's row of ``matrix`` (-1 where not held)."""
        get = self._position.get
        return np.fromiter((get(label, -1) for label in labels.tolist()), dtype=np.int64, count=len(labels))

    def remove(self, labels: np.ndarray) -> None:
        for label in labels.tolist():
            at = self._position.pop(label, None)
            if at is None:
                continue
            last = len(self.labels) - 1
            if at != last:  # the last row takes the hole
                moved = int(self.labels[last])
                self._matrix[at] = self._matrix[last]
                self.labels[at] = moved
                self._position[moved] = at
            self.labels.truncate(last)

    def search(self, queries: np.ndarray, k: int, gather: Gather, near: bool = False
               ) -> list[tuple[np.ndarray, np.ndarray]]:
        if not len(self.labels):
            return [(np.zeros(0, np.float32), np.zeros(0, np.int64)) for _ in queries]
        scores = self.matrix @ queries.T  # rows x queries
        labels = self.labels.values
        return [top_k(scores[:, j], labels, k) for j in range(len(queries))]

    def top_and_lowest(self, query: np.ndarray, k: int, gather: Gather) -> tuple[np.ndarray, np.ndarray, float]:
        """The k best of one query, and the lowest score of all, from one product."""
        if not len(self.labels):
            return np.zeros(0, np.float32), np.zeros(0, np.int64), np.inf
        scores = self.matrix @ query
        return (*top_k(scores, self.labels.values, k), float(scores.min()))

    def arrays(self) -> dict[str, np.ndarray]:
        return {"labels": self.labels.values, "matrix": self.matrix}

    @classmethod
    def from_arrays(cls, dim: int, arrays: dict[str, np.ndarray]) -> FlatShard:
        shard = cls(dim)
        shard.add(np.asarray(arrays["labels"], dtype=np.int64), np.asarray(arrays["matrix"], dtype=np.float32))
        return shard
