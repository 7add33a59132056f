"""One space's vectors of one kind, searched exactly while small and by faiss IVF when large.

A shard holds the records a reader of its space may find, and nothing else:
a forgotten record is removed from it (and put back on restore), so a search
never filters a shortlist afterwards and a small space in a huge store still
returns its true top k.

- ``FlatShard``: a float32 matrix, scored exactly (what faiss' ``IndexFlatIP``
  does), for up to ``AnnSettings.exact_max`` rows.
- ``IvfShard``: faiss ``IndexIVFPQ`` (inner product, product-quantized codes,
  labels = the records' rows, a hash direct map so removals cost O(removed)).
  A search reads ``probe`` lists, and the ``rerank`` x k best go back to exact
  scoring against the full vectors. ``probe`` is calibrated when the index is
  trained: the fewest lists whose re-ranked top 10 holds ``recall`` (0.99) of
  the exact top 10 for noisy copies of held vectors (on MuSiQue, such copies
  and the real query phrases need the same number of lists).
  Adds go straight in; when a shard has grown ``retrain_growth`` times past the
  size it was trained at, it is trained again (amortized O(1) per add).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import faiss
import numpy as np

from hippo.columns import Column

# faiss' OpenMP team, like igraph's, spins against the other busy core: on 2 shared cores
# training an IVF index took 62 s with two threads and 15 s with one (21k vectors, load ~20).
faiss.omp_set_num_threads(1)

Gather = Callable[[np.ndarray], np.ndarray]
"""Labels -> their float32 vectors (the exact scores of a shortlist)."""


CHUNK = 262_144  # vectors gathered at a time when (re)building an IVF index


@dataclass(frozen=True)
class AnnSettings:
    exact_max: int = 20_000  # rows a shard scans exactly before it becomes an IVF index
    recall: float = 0.99  # recall@10 an IVF shard is calibrated to (on noisy copies of its vectors)
    calibration: int = 128  # calibration queries
    query_noise: float = 1.5  # their distance from a held vector (MuSiQue queries vs entities: alike)
    min_probe: int = 8
    rerank: int = 8  # an IVF search scores rerank x k candidates exactly
    min_rerank: int = 64
    max_lists: int = 4_096
    sub_dims: int = 8  # dimensions per PQ sub-quantizer (384 -> 48 bytes a vector)
    retrain_growth: int = 4
    train_points: int = 64  # training vectors per centroid, at most
    train_iterations: int = 10  # k-means passes (faiss' default 25 costs 2.5x for no measurable recall)


def _lists(rows: int, settings: AnnSettings) -> int:
    """About 2 sqrt(rows) lists, each with at least 39 training vectors (faiss' minimum)."""
    return int(max(1, min(settings.max_lists, rows // 39, max(64, round(2 * math.sqrt(rows))))))


def _top(scores: np.ndarray, labels: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
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

    def search(self, queries: np.ndarray, k: int, gather: Gather) -> list[tuple[np.ndarray, np.ndarray]]:
        if not len(self.labels):
            return [(np.zeros(0, np.float32), np.zeros(0, np.int64)) for _ in queries]
        scores = self.matrix @ queries.T  # rows x queries
        labels = self.labels.values
        return [_top(scores[:, j], labels, k) for j in range(len(queries))]

    def arrays(self) -> dict[str, np.ndarray]:
        return {"labels": self.labels.values, "matrix": self.matrix}

    @classmethod
    def from_arrays(cls, dim: int, arrays: dict[str, np.ndarray]) -> FlatShard:
        shard = cls(dim)
        shard.add(np.asarray(arrays["labels"], dtype=np.int64), np.asarray(arrays["matrix"], dtype=np.float32))
        return shard


class IvfShard:
    kind = "ivf"

    def __init__(self, index: faiss.IndexIVFPQ, trained_rows: int, settings: AnnSettings, probe: int) -> None:
        self.index = index
        self.trained_rows = trained_rows
        self.settings = settings
        self.probe = probe  # lists searched: the fewest that reached ``settings.recall`` when trained

    @classmethod
    def trained(cls, labels: np.ndarray, gather: Gather, settings: AnnSettings) -> IvfShard:
        """Train on a sample of these labels' vectors, add them all (in chunks: a shard may not fit
        in memory as float32), then calibrate ``probe`` on noisy copies of held vectors."""
        labels = np.asarray(labels, dtype=np.int64)
        rng = np.random.default_rng(len(labels))
        first = gather(labels[:1])
        dim = first.shape[1]
        lists = _lists(len(labels), settings)
        sub = max(1, dim // settings.sub_dims)
        while dim % sub:
            sub -= 1
        bits = int(min(8, max(1, math.log2(max(2, len(labels) // 39)))))  # 2^bits codes, 39 vectors each
        index = faiss.IndexIVFPQ(faiss.IndexFlatIP(dim), dim, lists, sub, bits, faiss.METRIC_INNER_PRODUCT)
        for clustering in (index.cp, index.pq.cp):  # lists, then each sub-quantizer's 256 codes
            clustering.niter = settings.train_iterations
            clustering.max_points_per_centroid = settings.train_points
        sample = min(len(labels), max(lists * settings.train_points, 256 * 40))
        picked = np.sort(rng.choice(len(labels), sample, replace=False)) if sample < len(labels) \
            else np.arange(len(labels))
        index.train(np.ascontiguousarray(gather(labels[picked]), dtype=np.float32))
        index.set_direct_map_type(faiss.DirectMap.Hashtable)
        chosen = labels[rng.choice(len(labels), min(settings.calibration, len(labels)), replace=False)]
        queries = gather(chosen) + settings.query_noise / np.sqrt(dim) * rng.standard_normal(
            (len(chosen), dim)).astype(np.float32)
        queries /= np.linalg.norm(queries, axis=1, keepdims=True)
        best = np.full((len(queries), 10), -np.inf, dtype=np.float32)
        truth = np.full((len(queries), 10), -1, dtype=np.int64)
        for start in range(0, len(labels), CHUNK):  # add, and find the exact top 10 on the way
            part = labels[start : start + CHUNK]
            vectors = np.ascontiguousarray(gather(part), dtype=np.float32)
            index.add_with_ids(vectors, part)
            scores = np.concatenate([best, queries @ vectors.T], axis=1)
            ids = np.concatenate([truth, np.broadcast_to(part, (len(queries), len(part)))], axis=1)
            top = np.argsort(-scores, axis=1)[:, :10]
            best, truth = np.take_along_axis(scores, top, 1), np.take_along_axis(ids, top, 1)
        shard = cls(index, len(labels), settings, probe=lists)
        shard.probe = shard._calibrate(queries, truth, best, gather)
        return shard

    def _calibrate(self, queries: np.ndarray, truth: np.ndarray, best: np.ndarray, gather: Gather) -> int:
        """The fewest lists (from ``min_probe``, x1.5 a step) whose re-ranked top 10 holds
        ``settings.recall`` of the exact one (ties count as found)."""
        probe = min(self.settings.min_probe, self.index.nlist)
        while True:
            self.probe = probe
            found = self.search(queries, 10, gather)
            recall = np.mean([np.mean(scores[:10] >= floor[-1] - 1e-6) if len(scores) >= 10 else 0.0
                              for (scores, _), floor in zip(found, best, strict=True)])
            if recall >= self.settings.recall or probe >= self.index.nlist:
                return probe
            probe = min(max(probe + 1, int(probe * 1.5)), self.index.nlist)

    def __len__(self) -> int:
        return int(self.index.ntotal)

    def needs_training(self) -> bool:
        return len(self) > self.settings.retrain_growth * self.trained_rows

    def add(self, labels: np.ndarray, vectors: np.ndarray) -> None:
        if len(labels):
            self.remove(labels)  # adding twice would return a record twice
            self.index.add_with_ids(np.ascontiguousarray(vectors, dtype=np.float32),
                                    np.ascontiguousarray(labels, dtype=np.int64))

    def remove(self, labels: np.ndarray) -> None:
        if len(labels):
            self.index.remove_ids(faiss.IDSelectorArray(np.ascontiguousarray(labels, dtype=np.int64)))

    def labels(self) -> np.ndarray:
        """Every label held, for retraining (O(rows))."""
        invlists = self.index.invlists
        parts = [faiss.rev_swig_ptr(invlists.get_ids(i), invlists.list_size(i)).copy()
                 for i in range(self.index.nlist) if invlists.list_size(i)]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)

    def search(self, queries: np.ndarray, k: int, gather: Gather) -> list[tuple[np.ndarray, np.ndarray]]:
        s = self.settings
        params = faiss.SearchParametersIVF()
        params.nprobe = int(self.probe)
        shortlist = int(min(len(self), max(s.min_rerank, s.rerank * k)))
        if shortlist == 0:
            return [(np.zeros(0, np.float32), np.zeros(0, np.int64)) for _ in queries]
        _, found = self.index.search(np.ascontiguousarray(queries, dtype=np.float32), shortlist, params=params)
        out = []
        for j, row in enumerate(found):
            labels = row[row >= 0]
            exact = gather(labels) @ queries[j] if len(labels) else np.zeros(0, np.float32)
            out.append(_top(exact.astype(np.float32), labels, k))
        return out

