"""Entries grouped by key, grown by appends: a few sorted runs merged by size (an LSM tree).

The projection's adjacency (key: vertex) and the keyword postings (key: term)
both grow one write batch at a time and are read by key. An append goes to a
pending list in O(batch); the first read after it seals the pending entries
into a sorted run (a CSR: ``indptr`` over keys), and a run merges into the one
before it when that one is at most ``MERGE_RATIO`` times larger, so there are
O(log n) runs and each entry is rewritten O(log n) times over its life.
Nothing is rebuilt per write, and reading a key costs one slice per run.

Entries of a key keep insertion order within and across runs (older runs
first), which the callers rely on (rows and passage vertices only grow).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from hippo.columns import Column

MERGE_RATIO = 4


def segment_indices(indptr: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(entries per key, positions of all their entries) in a CSR row-pointer array."""
    starts = indptr[keys]
    counts = indptr[keys + 1] - starts
    return counts, ranges(starts, counts)


def ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The positions ``starts[i], ..., starts[i] + counts[i] - 1`` for each ``i`` in turn, as one array."""
    total = int(counts.sum())
    if not total:
        return np.zeros(0, dtype=np.int64)
    return np.repeat(starts - (np.cumsum(counts) - counts), counts) + np.arange(total)


@dataclass(frozen=True)
class Run:
    """One sorted batch of entries: ``indptr`` over the keys that existed when it was sealed."""

    indptr: np.ndarray  # int64, keys + 1
    columns: dict[str, np.ndarray]

    def __getattr__(self, name: str) -> np.ndarray:
        try:
            return self.columns[name]
        except KeyError:
            raise AttributeError(name) from None

    @property
    def size(self) -> int:
        return int(self.indptr[-1])

    @property
    def keys(self) -> int:
        return len(self.indptr) - 1

    @classmethod
    def sealed(cls, n: int, keys: np.ndarray, columns: dict[str, np.ndarray]) -> Run:
        order = np.argsort(keys, kind="stable")
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(keys, minlength=n), out=indptr[1:])
        return cls(indptr=indptr, columns={name: values[order] for name, values in columns.items()})

    def count(self, keys: np.ndarray) -> np.ndarray:
        inside = keys < self.keys
        out = np.zeros(len(keys), dtype=np.int64)
        out[inside] = self.indptr[keys[inside] + 1] - self.indptr[keys[inside]]
        return out

    def positions(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(index into ``keys`` of each entry, entry positions) of these keys' entries."""
        asked = np.flatnonzero(keys < self.keys)
        counts, at = segment_indices(self.indptr, keys[asked])
        return np.repeat(asked, counts), at

    def merged(self, later: Run) -> Run:
        """This run followed by ``later``, key by key, without sorting (both are sorted by key)."""
        n = max(self.keys, later.keys)
        mine = np.pad(self.indptr, (0, n + 1 - len(self.indptr)), mode="edge")
        theirs = np.pad(later.indptr, (0, n + 1 - len(later.indptr)), mode="edge")
        a, b = np.diff(mine), np.diff(theirs)
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(a + b, out=indptr[1:])
        where_a = np.arange(self.size) + np.repeat(indptr[:-1] - mine[:-1], a)
        where_b = np.arange(later.size) + np.repeat(indptr[:-1] + a - theirs[:-1], b)
        columns = {}
        for name, first in self.columns.items():
            column = np.empty(self.size + later.size, dtype=first.dtype)
            column[where_a] = first
            column[where_b] = later.columns[name]
            columns[name] = column
        return Run(indptr=indptr, columns=columns)


class SortedRuns:
    """Appends in O(batch), reads by key across a few sorted runs."""

    def __init__(self, dtypes: dict[str, np.typing.DTypeLike], runs: list[Run] | None = None) -> None:
        self.dtypes = {name: np.dtype(dtype) for name, dtype in dtypes.items()}
        self.runs: list[Run] = runs or []
        self._keys = Column(np.int64)
        self._pending = {name: Column(dtype) for name, dtype in self.dtypes.items()}
        self._lock = threading.Lock()  # readers may seal at once

    @property
    def size(self) -> int:
        return sum(r.size for r in self.runs) + len(self._keys)

    @property
    def has_pending(self) -> bool:
        return bool(len(self._keys))

    def add(self, keys: np.ndarray, **columns: np.ndarray) -> None:
        self._keys.append(keys)
        for name, values in columns.items():
            self._pending[name].append(values)

    def seal(self, key_count: int) -> None:
        """Turn pending entries into a run, then merge runs of similar size."""
        with self._lock:
            if not len(self._keys):
                return
            run = Run.sealed(key_count, self._keys.values.copy(),
                             {name: column.values.copy() for name, column in self._pending.items()})
            runs = [*self.runs, run]
            while len(runs) > 1 and runs[-2].size <= MERGE_RATIO * runs[-1].size:
                later = runs.pop()
                runs[-1] = runs[-1].merged(later)
            # The runs first, then the empty pending: a reader who finds nothing pending (without the
            # lock) reads the runs at once, so they must already hold every entry.
            self.runs = runs  # readers may be iterating the list before
            self._keys = Column(np.int64)
            self._pending = {name: Column(dtype) for name, dtype in self.dtypes.items()}

    def merge_tail(self, key_count: int, most: int) -> None:
        """Merge the newest (smallest) runs until at most ``most`` remain."""
        self.seal(key_count)
        with self._lock:
            runs = list(self.runs)
            while len(runs) > max(most, 1):
                later = runs.pop()
                runs[-1] = runs[-1].merged(later)
            self.runs = runs

    def compact(self, key_count: int) -> Run:
        """Everything in one run (before saving); returns it."""
        self.seal(key_count)
        with self._lock:
            runs = list(self.runs)
            while len(runs) > 1:
                later = runs.pop()
                runs[-1] = runs[-1].merged(later)
            if not runs:
                runs = [Run(indptr=np.zeros(key_count + 1, dtype=np.int64),
                            columns={name: np.zeros(0, dtype) for name, dtype in self.dtypes.items()})]
            self.runs = runs
            return runs[0]

    def count(self, keys: np.ndarray) -> np.ndarray:
        """Entries per key (sealed runs only: ``seal`` first)."""
        total = np.zeros(len(keys), dtype=np.int64)
        for run in self.runs:
            total += run.count(keys)
        return total

    def entries(self, keys: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """(owner index into ``keys``, columns) of every entry at these keys, oldest run first
        (sealed runs only: ``seal`` first)."""
        owners, parts = [], {name: [] for name in self.dtypes}
        for run in self.runs:
            owner, at = run.positions(keys)
            if len(at):
                owners.append(owner)
                for name in parts:
                    parts[name].append(run.columns[name][at])
        if not owners:
            return np.zeros(0, dtype=np.int64), {name: np.zeros(0, dtype) for name, dtype in self.dtypes.items()}
        if len(owners) == 1:
            return owners[0], {name: values[0] for name, values in parts.items()}
        return np.concatenate(owners), {name: np.concatenate(values) for name, values in parts.items()}
