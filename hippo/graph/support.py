"""Which entities each space's live passages mention, counted, kept up to date by writes.

An entity is visible to a reader when a live passage of a space they may read
mentions it, and its node specificity is the number of such passages. Both
are sums over the reader's spaces of per-space counts, so a recall reads a
handful of numbers instead of masking every vertex. Large spaces keep a dense
array; small ones (a user's notes) a sorted pair of arrays, so a thousand
small spaces cost little.
"""

from __future__ import annotations

import numpy as np

from hippo.columns import Column

DENSE_AT = 50_000  # entries above which a space's counts become a dense array


class _Sparse:
    """Counts of one small space: a dict for updates, sorted arrays for vectorized reads."""

    def __init__(self) -> None:
        self.counts: dict[int, int] = {}
        self._pairs: tuple[np.ndarray, np.ndarray] | None = None  # one attribute: readers see both or none

    def change(self, vertices: np.ndarray, delta: int) -> None:
        for v in vertices.tolist():
            left = self.counts.get(v, 0) + delta
            if left:
                self.counts[v] = left
            else:
                self.counts.pop(v, None)
        self._pairs = None

    def sorted_pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """(entity vertices, counts), sorted by vertex."""
        pairs = self._pairs
        if pairs is None:
            keys = np.fromiter(self.counts, dtype=np.int64, count=len(self.counts))
            values = np.fromiter(self.counts.values(), dtype=np.int64, count=len(self.counts))
            order = np.argsort(keys)
            pairs = self._pairs = (keys[order], values[order])
        return pairs

    def take(self, vertices: np.ndarray) -> np.ndarray:
        keys, values = self.sorted_pairs()
        if not len(keys):
            return np.zeros(len(vertices), dtype=np.int64)
        at = np.minimum(np.searchsorted(keys, vertices), len(keys) - 1)
        return np.where(keys[at] == vertices, values[at], 0)


class SpaceSupport:
    """Per space code: live passages, and live passages mentioning each entity vertex."""

    def __init__(self) -> None:
        self.total = Column(np.int32)  # all spaces, per vertex
        self.passages = Column(np.int64)  # live passages per space code
        self._spaces: list[_Sparse | Column] = []

    def _space(self, code: int) -> _Sparse | Column:
        while len(self._spaces) <= code:
            self._spaces.append(_Sparse())
            self.passages.append(0)
        return self._spaces[code]

    def reserve(self, code: int) -> None:
        """Make room for space ``code`` (and the codes below it), holding nothing yet."""
        self._space(code)

    def change(self, code: int, entities: np.ndarray, delta: int, passages: int) -> tuple[np.ndarray, np.ndarray]:
        """``passages`` live passages of space ``code`` came (+) or went (-), mentioning ``entities``
        (one entry per mention). Returns the entities the space gained and lost."""
        space = self._space(code)
        self.passages[code] += passages
        if not len(entities):
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        distinct = np.unique(entities)
        before = self.counts(np.array([code]), distinct)
        top = int(entities.max()) + 1
        self.total.extend_to(top)
        np.add.at(self.total.values, entities, delta)
        if isinstance(space, _Sparse) and len(space.counts) + len(distinct) > DENSE_AT:
            dense = Column(np.int32)
            dense.extend_to(max(top, max(space.counts) + 1) if space.counts else top)
            if space.counts:
                dense[np.fromiter(space.counts, dtype=np.int64)] = np.fromiter(space.counts.values(),
                                                                               dtype=np.int32)
            space = self._spaces[code] = dense
        if isinstance(space, _Sparse):
            space.change(entities, delta)
        else:
            space.extend_to(top)
            np.add.at(space.values, entities, delta)
        after = self.counts(np.array([code]), distinct)
        return distinct[(before == 0) & (after > 0)], distinct[(before > 0) & (after == 0)]

    def spaces_of(self, entity: int) -> list[int]:
        """Space codes whose live passages mention ``entity``."""
        probe = np.array([entity])
        return [code for code in range(len(self._spaces)) if self.counts(np.array([code]), probe)[0] > 0]

    def counts(self, codes: np.ndarray | None, vertices: np.ndarray) -> np.ndarray:
        """Live passages of spaces ``codes`` (None: all) mentioning each vertex."""
        vertices = np.asarray(vertices, dtype=np.int64)
        if codes is None:
            return _dense_take(self.total, vertices)
        found = np.zeros(len(vertices), dtype=np.int64)
        for code in codes.tolist():
            if code < len(self._spaces):
                space = self._spaces[code]
                found += space.take(vertices) if isinstance(space, _Sparse) else _dense_take(space, vertices)
        return found

    def count_arrays(self, codes: np.ndarray | None) -> tuple[list[np.ndarray], list[tuple[np.ndarray, np.ndarray]]]:
        """What ``counts`` sums, as arrays: (dense counts per vertex, sorted (vertices, counts) pairs)
        of spaces ``codes`` (None: one dense array over all spaces). For compiled readers."""
        if codes is None:
            return [self.total.values], []
        dense, pairs = [], []
        for code in codes.tolist():
            if code < len(self._spaces):
                space = self._spaces[code]
                if isinstance(space, _Sparse):
                    pairs.append(space.sorted_pairs())
                else:
                    dense.append(space.values)
        return dense, pairs

    def passage_total(self, codes: np.ndarray | None) -> int:
        values = self.passages.values
        if codes is None:
            return int(values.sum())
        return int(values[codes[codes < len(values)]].sum())

    def spaces_with_passages(self) -> np.ndarray:
        return np.flatnonzero(self.passages.values > 0)


def _dense_take(column: Column, vertices: np.ndarray) -> np.ndarray:
    values = column.values
    inside = vertices < len(values)
    out = np.zeros(len(vertices), dtype=np.int64)
    out[inside] = values[vertices[inside]]
    return out
