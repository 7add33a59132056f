"""Vector search over one kind of record (passages, entities or facts), per space.

Every vector is kept once, by slot, in a ``VectorStore``: float32 while the
kind is small, float16 past ``HALF_FROM`` rows (halves memory; a cosine moves
by < 1e-3), read from the saved derived state's file when there is one
(``hippo.memory.pages.FileRows``: read by position, not held).
Search goes to shards (``hippo.memory.shards``), one per space: a record is
in the shard of every space whose readers may find it (a passage or fact in
its own; an entity in each space whose live passages mention it). A reader's
search runs on the shards of the spaces they may read and merges them, so
visibility is decided by what each shard holds, never by filtering results.

Labels are the caller's numbering (graph vertices for passages and entities,
fact rows for facts).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from hippo.columns import Column
from hippo.memory.ann import AnnSettings
from hippo.memory.flat import FlatShard
from hippo.memory.pages import FileRows
from hippo.memory.segments import Results, SegmentedShard, graph_of, graphs_of, merged
from hippo.memory.shards import HnswShard

HALF_FROM = 262_144  # rows after which a kind's vectors are kept as float16
FLAT_LOOKUPS = 4  # flat shards a label is looked up in before its row is read from the store instead
Saved = FileRows | np.ndarray  # rows on disk (or an array where there are none, or after ``_halve``)


class VectorStore:
    """Vectors by slot: an optional read-only saved part, then rows added since, in RAM."""

    def __init__(self, dim: int, saved: Saved | None = None) -> None:
        self.dim = dim
        self.saved: Saved = saved if saved is not None else np.zeros((0, dim), dtype=np.float32)
        self.dtype = self.saved.dtype if len(self.saved) else np.dtype(np.float32)
        self._tail = np.zeros((0, dim), dtype=self.dtype)
        self._size = 0

    def __len__(self) -> int:
        return len(self.saved) + self._size

    @property
    def tail(self) -> np.ndarray:
        return self._tail[: self._size]

    def append(self, vectors: np.ndarray) -> int:
        """Add rows; returns the first new slot."""
        first = len(self)
        if first + len(vectors) > HALF_FROM and self.dtype != np.float16:
            self._halve()
        need = self._size + len(vectors)
        if need > len(self._tail):
            grown = np.zeros((max(need, 2 * len(self._tail), 64), self.dim), dtype=self.dtype)
            grown[: self._size] = self._tail[: self._size]
            self._tail = grown
        self._tail[self._size : need] = vectors
        self._size = need
        return first

    def _halve(self) -> None:
        if len(self.saved):
            self.saved = self.saved.astype(np.float16)  # a saved float32 part is read into memory once
        self._tail = self._tail.astype(np.float16)
        self.dtype = np.dtype(np.float16)

    def get(self, slots: np.ndarray) -> np.ndarray:
        slots = np.asarray(slots, dtype=np.int64)
        out = np.empty((len(slots), self.dim), dtype=np.float32)
        split = len(self.saved)
        old = slots < split
        if old.any():
            out[old] = self.saved[slots[old]]
        if (~old).any():
            out[~old] = self._tail[slots[~old] - split]
        return out

    def attach(self, saved: Saved) -> None:
        """The first ``len(saved)`` rows are now on disk (the saved state's file): drop them from RAM."""
        moved = len(saved) - len(self.saved)
        self._tail = self._tail[moved : self._size].copy()
        self._size -= moved
        self.saved = saved


class VectorIndex:
    def __init__(self, dim: int, settings: AnnSettings | None = None) -> None:
        self.dim = dim
        self.settings = settings or AnnSettings()
        self.store = VectorStore(dim)
        self.keys = Column(np.uint64)  # per slot: the record's text hash (same text, same key)
        self.label_of = Column(np.int64)  # per slot
        self.slot_of = Column(np.int64)  # per label: its slot, or -1
        self.shards: dict[int, FlatShard | HnswShard | SegmentedShard] = {}

    def __len__(self) -> int:
        return len(self.label_of)

    def has(self, labels: np.ndarray) -> np.ndarray:
        labels = np.asarray(labels, dtype=np.int64)
        slots = self.slot_of.values
        inside = labels < len(slots)
        found = np.zeros(len(labels), dtype=bool)
        found[inside] = slots[labels[inside]] >= 0
        return found

    def add(self, labels: np.ndarray, keys: np.ndarray, vectors: np.ndarray) -> np.ndarray:
        """Store vectors of labels not held yet; returns the labels added."""
        labels = np.asarray(labels, dtype=np.int64)
        if vectors.shape != (len(labels), self.dim):
            raise ValueError(f"expected {len(labels)} vectors of {self.dim} dims, got {vectors.shape}")
        fresh = ~self.has(labels)
        _, first = np.unique(labels, return_index=True)
        once = np.zeros(len(labels), dtype=bool)
        once[first] = True
        pick = fresh & once
        labels = labels[pick]
        if not len(labels):
            return labels
        vectors = np.asarray(vectors, dtype=np.float32)
        start = self.store.append(vectors if pick.all() else vectors[pick])  # a rebuild adds 1M facts at once
        self.keys.append(np.asarray(keys, dtype=np.uint64)[pick])
        self.label_of.append(labels)
        self.slot_of.extend_to(int(labels.max()) + 1, -1)
        self.slot_of[labels] = np.arange(start, start + len(labels))
        return labels

    def vectors_of(self, labels: np.ndarray) -> np.ndarray:
        return self.store.get(self.slot_of[np.asarray(labels, dtype=np.int64)])

    def key_of(self, labels: np.ndarray) -> np.ndarray:
        return self.keys[self.slot_of[np.asarray(labels, dtype=np.int64)]]

    def scores(self, query: np.ndarray, labels: np.ndarray) -> np.ndarray:
        """Cosine of these labels' vectors with ``query`` (-inf for a label without a vector)."""
        labels = np.asarray(labels, dtype=np.int64)
        out = np.full(len(labels), -np.inf, dtype=np.float32)
        held = self.has(labels)
        if held.any():
            out[held] = self._rows(labels[held]) @ np.asarray(query, dtype=np.float32)
        return out

    def _rows(self, labels: np.ndarray) -> np.ndarray:
        """The vectors of held ``labels``: those an exact shard keeps in memory are read from it (the
        same numbers while the store keeps float32), the rest from the store, where a saved row is a
        file read each (the passage prior of a 6k-passage store read ~180 rows a recall that way). A label
        is looked up in every flat shard until found: past ``FLAT_LOOKUPS`` shards that costs more than
        the file reads it saves (~1 us a row against ~0.1 a lookup), and the store answers alone."""
        rows, left = None, np.ones(len(labels), dtype=bool)
        flat = [s for s in self.shards.values() if isinstance(s, FlatShard)] if self.store.dtype == np.float32 else []
        for shard in flat if len(flat) <= FLAT_LOOKUPS else ():
            at = shard.positions(labels)
            found = left & (at >= 0)
            if found.any():
                rows = np.empty((len(labels), self.dim), dtype=np.float32) if rows is None else rows
                rows[found] = shard.matrix[at[found]]
                left &= ~found
                if not left.any():
                    return rows
        if rows is None:
            return self.vectors_of(labels)
        rows[left] = self.vectors_of(labels[left])
        return rows

    # -- shards --------------------------------------------------------------------

    def include(self, shard: int, labels: np.ndarray, vectors: np.ndarray | None = None) -> None:
        """Make these labels findable by readers of ``shard`` (labels without a vector are skipped)."""
        labels = np.asarray(labels, dtype=np.int64)
        held = self.has(labels)
        labels = labels[held]
        if not len(labels):
            return
        vectors = np.asarray(vectors, dtype=np.float32)[held] if vectors is not None else self.vectors_of(labels)
        current = self.shards.get(shard)
        flat = current is None or isinstance(current, FlatShard)
        if flat and (len(current) if current is not None else 0) + len(labels) > self.settings.exact_max:
            if current is not None:  # grown past exact: a graph of everything it holds
                labels = np.concatenate([current.labels.values, labels])
            self.shards[shard] = graph_of(np.unique(labels), self.vectors_of, self.settings)
            return
        if isinstance(current, HnswShard) and current.index.ntotal + len(labels) > self.settings.graph_rows:
            current = self.shards[shard] = SegmentedShard([current], self.settings)  # full: the next graph
        if isinstance(current, SegmentedShard):
            current.add(labels, vectors, self.vectors_of)
            self.calibrate([shard])
            return
        if isinstance(current, HnswShard) and current.narrower_than(len(current) + len(labels)):
            # grown past ``wide_build_from``: linked again whole, once, as a graph built at that size
            # would be (its first rows linked narrow made 1M facts walk at ef 972, not 288)
            labels = np.unique(np.concatenate([current.labels(), labels]))
            self.shards[shard] = graph_of(labels, self.vectors_of, self.settings)
            return
        if current is None:
            current = self.shards[shard] = FlatShard(self.dim)
        current.add(labels, vectors)
        self.calibrate([shard])

    def relinkable(self) -> list[int]:
        """The shards whose graphs are linked as graphs of their size are not linked today (``HnswShard.relinkable``),
        or held in one graph past ``graph_rows``: saved by an older hippo, which writes only grow."""
        return [code for code, shard in self.shards.items() if isinstance(shard, HnswShard | SegmentedShard)
                and (shard.relinkable() or isinstance(shard, HnswShard) and len(shard) > self.settings.graph_rows)]

    def relink(self) -> list[int]:
        """Build again whole, now, each ``relinkable`` graph; the shards built."""
        done = self.relinkable()
        for code in done:
            self.shards[code] = graph_of(self.shards[code].labels(), self.vectors_of, self.settings)
        return done

    def calibrate(self, shards: Iterable[int] | None = None) -> list[int]:
        """Calibrate again each graph of ``shards`` (None: all) grown ``recalibrate_growth`` times since
        it last was; the shards calibrated."""
        done = []
        for code in self.shards if shards is None else shards:
            current = self.shards.get(code)
            if isinstance(current, HnswShard | SegmentedShard) and current.needs_calibration():
                current.recalibrated(self.vectors_of)
                done.append(code)
        return done

    def calibrations(self) -> dict[str, int]:
        """Per graph (its key as saved, ``segments.graphs_of``), the rows it was last calibrated at."""
        return {key: graph.calibrated for code, shard in self.shards.items() if not isinstance(shard, FlatShard)
                for key, graph in graphs_of(code, shard)}

    def exclude(self, shard: int, labels: np.ndarray) -> None:
        current = self.shards.get(shard)
        if current is None or not len(labels):
            return
        current.remove(np.asarray(labels, dtype=np.int64))
        if isinstance(current, SegmentedShard) and current.needs_rebuild():
            current.rebuilt(self.vectors_of)
        elif isinstance(current, HnswShard) and current.needs_rebuild():  # a quarter dead: amortized O(1)
            self.shards[shard] = HnswShard.built(current.labels(), self.vectors_of, self.settings)

    def search(self, queries: np.ndarray, k: int, shards: Iterable[int] | None = None, *,
               near: bool = False) -> Results:
        """Each query's ``k`` best labels (and cosines) in the union of ``shards`` (None: all).
        ``near``: the queries are close to held vectors (synonyms), a shorter graph walk suffices."""
        queries = np.atleast_2d(np.asarray(queries, dtype=np.float32))
        chosen = [self.shards[c] for c in (self.shards if shards is None else shards) if c in self.shards]
        if k <= 0 or not chosen:
            return [(np.zeros(0, np.float32), np.zeros(0, np.int64)) for _ in queries]
        return merged([shard.search(queries, k, self.vectors_of, near=near) for shard in chosen], k)

    def top_and_lowest(self, query: np.ndarray, k: int, shards: Iterable[int] | None = None
                       ) -> tuple[np.ndarray, np.ndarray, float]:
        """``search`` for one query, plus the lowest cosine of any vector in ``shards`` (the bottom of
        a min-max scale over everything the reader may see, without scoring everything twice)."""
        query = np.asarray(query, dtype=np.float32)
        chosen = [self.shards[c] for c in (self.shards if shards is None else shards) if c in self.shards]
        if k <= 0 or not chosen:
            return np.zeros(0, np.float32), np.zeros(0, np.int64), 0.0
        found = [shard.top_and_lowest(query, k, self.vectors_of) for shard in chosen]
        (scores, labels), = merged([[(part[0], part[1])] for part in found], k)
        return scores, labels, min(part[2] for part in found)

    def shard_sizes(self) -> dict[int, tuple[str, int]]:
        return {code: (shard.kind, len(shard)) for code, shard in self.shards.items()}
