"""What store-side recalls keep between queries (``hippo.memory.store_source``): names, handles, edges.

All of it is bounded by settings, not by the graph: a recall's ``NodeTable`` holds
at most ``neo4j_read_nodes`` handles (and its ``Fetched`` their edges); a reader's
``ReaderCache`` the edges of at most ``neo4j_read_cache`` nodes and the ``Names``
they point to, at one store revision (moved to the next without what its writes changed; when
full, down to the nodes most recalls walked).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from hippo.columns import Column
from hippo.errors import StoreError
from hippo.graph.ppr import this_workspace
from hippo.memory.store_names import Names
from hippo.runs import ranges

NONE = -1.0  # ``EdgeCache.total`` of a node the store keeps no counters for (a store not migrated)


class NodeTable:
    """Integer handles for the records one recall has seen, numbered in the order it met them (a walk
    breaks ties by handle, so they never depend on earlier recalls); every passage handle is a visible
    passage."""

    def __init__(self, capacity: int, names: Names | None = None) -> None:
        self.capacity = capacity
        self.names = names if names is not None else Names()
        self.size = 0
        self.named = np.zeros(0, dtype=np.int64)  # handle -> name
        self.local = np.zeros(0, dtype=np.int32)  # name -> handle + 1 (0: none yet)
        self.passage = np.zeros(0, dtype=bool)  # handle -> is a passage
        self.count: dict[int, int] = {}  # entity handle -> visible passages mentioning it

    @property
    def ids(self) -> _HandleIds:
        # Made on each use, not kept: kept, it and the table would be a reference cycle, and each
        # recall's table (its ``local`` array ~1 MB at 100k passages) would wait for the cyclic GC.
        return _HandleIds(self)

    def find(self, rid: str) -> int | None:
        """The handle of ``rid`` if this recall has met it."""
        n = self.names.index.get(rid)
        if n is None or n >= len(self.local) or not self.local[n]:
            return None
        return int(self.local[n]) - 1

    def handle(self, rid: str, passage: bool) -> int:
        return int(self.handles([rid], passage)[0])

    def handles(self, ids: list[str], passage: bool) -> np.ndarray:
        return self.of_names(self.names.of(ids, passage))

    def of_names(self, names: np.ndarray) -> np.ndarray:
        """The handles of these names, new ones numbered in order of first appearance."""
        if len(self.local) < len(self.names):
            self.local = np.concatenate([self.local, np.zeros(len(self.names) + 1024, dtype=np.int32)])
        found = self.local[names]
        missing = found == 0
        if not missing.any():
            return found.astype(np.int64) - 1
        fresh = this_workspace().first_seen(names[missing])
        start, end = self.size, self.size + len(fresh)
        if end > self.capacity:
            raise StoreError(f"a store-side recall reached more than {self.capacity} nodes "
                             "(settings.neo4j_read_nodes, env HIPPO_NEO4J_READ_NODES)")
        if end > len(self.named):
            grow = max(1024, end)
            self.named = np.concatenate([self.named, np.zeros(grow, dtype=np.int64)])
            self.passage = np.concatenate([self.passage, np.zeros(grow, dtype=bool)])
        self.local[fresh] = np.arange(start + 1, end + 1, dtype=np.int32)
        self.named[start:end] = fresh
        self.passage[start:end] = self.names.passage[fresh]
        self.size = end
        return self.local[names].astype(np.int64) - 1


class _HandleIds:
    """``table.ids[h]``: the record id of a handle."""

    def __init__(self, table: NodeTable) -> None:
        self.table = table

    def __getitem__(self, handle: int) -> str:
        return self.table.names.ids[self.table.named[handle]]


class Fetched:
    """Edges by integer key (a recall's handles; in ``EdgeCache``, a reader's names), appended a push
    wave at a time: a key's are one run of the columns, so a wave gathers its frontier's edges with
    array operations instead of a Python step per node (that step was ~15% of a store-side 2Wiki recall)."""

    def __init__(self) -> None:
        self.start, self.length = Column(np.int64), Column(np.int64)  # by key; length -1: not fetched
        self.targets, self.weights, self.kinds = Column(np.int64), Column(np.float64), Column(np.int8)

    def missing(self, handles: np.ndarray) -> np.ndarray:
        """The handles not fetched yet, each once, in the order first met."""
        handles = this_workspace().first_seen(handles)
        return handles[~self.has(handles)]

    def has(self, handles: np.ndarray) -> np.ndarray:
        """Whether each of ``handles`` was fetched."""
        known = handles < len(self.length)
        known[known] = self.length[handles[known]] >= 0
        return known

    def add(self, handles: np.ndarray, lengths: np.ndarray, targets: np.ndarray, weights: np.ndarray,
            kinds: np.ndarray) -> None:
        """The edges of ``handles`` (not fetched before), concatenated in their order."""
        top = int(handles.max()) + 1
        self.start.extend_to(top, 0)
        self.length.extend_to(top, -1)
        self.start[handles] = len(self.targets) + np.cumsum(lengths) - lengths
        self.length[handles] = lengths
        self.targets.append(targets)
        self.weights.append(weights)
        self.kinds.append(kinds)

    def positions(self, handles: np.ndarray) -> tuple[np.ndarray, np.ndarray | slice]:
        """(owner: the position in ``handles``, the edge's position in the columns) of every edge of
        ``handles``; a slice where their runs lie end to end in that order (a push wave new to the
        walk, just added: one stretch of the columns, not gathered edge by edge)."""
        lengths, starts = self.length[handles], self.start[handles]
        owners = np.repeat(np.arange(len(handles)), lengths)
        if len(handles) and np.array_equal(starts[1:], starts[:-1] + lengths[:-1]):
            return owners, slice(int(starts[0]), int(starts[0] + lengths.sum()))
        return owners, ranges(starts, lengths)

    def of(self, handles: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(owner: the position in ``handles``, target, weight, kind) of every edge of ``handles``, copies."""
        owners, at = self.positions(handles)
        return owners, _take(self.targets, at), _take(self.weights, at), _take(self.kinds, at)

    def targets_of(self, handle: int) -> np.ndarray:
        start = int(self.start[handle])
        return self.targets.values[start : start + int(self.length[handle])]


def _take(column: Column, at: np.ndarray | slice) -> np.ndarray:
    """A column's entries at ``positions``' answer, as an array of their own (a slice is a view)."""
    return column.values[at].copy() if isinstance(at, slice) else column.values[at]


class EdgeCache:
    """The visible edges of the nodes recalls fetched, by ``Names``, as runs (``Fetched``), each node's
    strength (the sum of its visible edges' weights) and, for an entity, the visible passages
    mentioning it; and the strength over every edge of each node a fetched edge reached (``learn``).
    A wave of 26k cached nodes (a 2Wiki recall) is then a few array operations; as one small object per node,
    turning them into a recall's edges was most of its client CPU. Recalls of one reader may share
    it from several threads: reads and adds hold its lock."""

    def __init__(self) -> None:
        self.runs = Fetched()
        self.total = Column(np.float64)  # by name: strength over every edge (NaN: not learnt; NONE: the store has none)
        self.strength, self.passages = Column(np.float64), Column(np.int64)
        self.uses = Column(np.int64)  # by name: the recalls that gathered its edges (``most_used``)
        self.nodes = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return self.nodes

    def unknown(self, names: np.ndarray) -> np.ndarray:
        """The names among ``names`` (each once) whose edges were never added."""
        with self._lock:
            return self.runs.missing(names)

    def learn(self, names: np.ndarray, totals: np.ndarray) -> None:
        """The strengths over every edge of ``names`` (NaN: the store keeps none), as the store has them
        at this cache's revision."""
        with self._lock:
            self._learn(names, totals)

    def _learn(self, names: np.ndarray, totals: np.ndarray) -> None:
        if len(names):
            self.total.extend_to(int(names.max()) + 1, np.nan)
            self.total[names] = np.where(np.isnan(totals), NONE, totals)

    def learned(self, names: np.ndarray) -> np.ndarray:
        """Whether the strength over every edge of each of ``names`` was learnt."""
        total = self.total.values
        known = names < len(total)
        known[known] = ~np.isnan(total[names[known]])
        return known

    def totals(self, names: np.ndarray) -> np.ndarray:
        """The strengths over every edge of ``names``, NaN where not learnt or the store keeps none."""
        total = self.total.values
        out = np.full(len(names), np.nan)
        known = names < len(total)
        found = total[names[known]]
        out[known] = np.where(found == NONE, np.nan, found)
        return out

    def add(self, names: np.ndarray, lengths: np.ndarray, targets: np.ndarray, weights: np.ndarray,
            kinds: np.ndarray, passages: np.ndarray) -> None:
        """The edges of ``names`` (unknown before, each once), concatenated in their order."""
        with self._lock:
            fresh = self.runs.missing(names)
            if len(fresh) < len(names):  # another recall added some meanwhile
                keep = np.isin(names, fresh)
                inside = np.repeat(keep, lengths)
                names, lengths, passages = names[keep], lengths[keep], passages[keep]
                targets, weights, kinds = targets[inside], weights[inside], kinds[inside]
            if not len(names):
                return
            top = int(names.max()) + 1
            self.strength.extend_to(top, 0.0)
            self.passages.extend_to(top, 0)
            self.uses.extend_to(top, 0)
            self.strength[names] = np.bincount(np.repeat(np.arange(len(names)), lengths), weights,
                                               minlength=len(names))
            self.passages[names] = passages
            self.runs.add(names, lengths, targets, weights, kinds)
            self.nodes += len(names)

    def without(self, names: np.ndarray, totals: np.ndarray) -> EdgeCache:
        """A copy without the edges of ``names`` (sorted), fetched again when a recall meets them, and
        with ``totals`` as their strengths over every edge (NaN: the store keeps none).
        A copy, so a recall still running at the old revision adds what it read to the old cache
        only. The space dropped edges held stays counted in ``len`` until the full cache is cut down
        (``most_used`` keeps no dropped node)."""
        with self._lock:
            copy = EdgeCache()
            mine, theirs = self.runs, copy.runs
            for name in ("start", "length", "targets", "weights", "kinds"):
                column = getattr(mine, name)
                setattr(theirs, name, Column(column.values.dtype, column.values.copy()))
            for name in ("total", "strength", "passages", "uses"):
                column = getattr(self, name)
                setattr(copy, name, Column(column.values.dtype, column.values.copy()))
            copy.nodes = self.nodes
        copy._learn(names, totals)
        theirs.length[names[names < len(theirs.length)]] = -1
        return copy

    def passage_counts(self, names: np.ndarray) -> np.ndarray:
        """The visible passages mentioning each of ``names`` where its edges were added, else -1."""
        with self._lock:
            fetched = self.runs.has(names)
            out = np.full(len(names), -1, dtype=np.int64)
            out[fetched] = self.passages.values[names[fetched]]
            return out

    def gather(self, names: np.ndarray) -> tuple[np.ndarray, ...]:
        """Per name (all added before): its edges' lengths, then all their targets, weights, kinds and
        targets' strengths over every edge in the order of ``names``, then each name's strength and
        visible passages."""
        with self._lock:
            self.uses[names] += 1  # a recall gathers a node once: it keeps what it gathered
            return self._gather(names)

    def _gather(self, names: np.ndarray) -> tuple[np.ndarray, ...]:
        _, at = self.runs.positions(names)
        runs = self.runs
        targets = _take(runs.targets, at)
        return (runs.length[names], targets, _take(runs.weights, at), _take(runs.kinds, at),
                self.totals(targets), self.strength[names], self.passages[names])

    def most_used(self, keep: int) -> EdgeCache:
        """A copy holding the edges of the ``keep`` nodes the most recalls gathered (ties: the lower
        name), each node's count halved, so what recalls stop asking for ages out."""
        with self._lock:
            length = self.runs.length.values
            names = np.flatnonzero(length >= 0)
            if len(names) > keep:
                names = np.sort(names[np.argsort(-self.uses.values[names], kind="stable")[:keep]])
            lengths, targets, weights, kinds, _, _, passages = self._gather(names)
            uses = self.uses.values[names] // 2
            total = self.total.values.copy()
        copy = EdgeCache()
        copy.total = Column(np.float64, total)  # what names stand for stays learnt: the names stay
        if len(names):
            copy.add(names, lengths, targets, weights, kinds, passages)
            copy.uses[names] = uses
        return copy


KEPT = 2  # a full ``ReaderCache`` keeps its most used nodes, a 1/KEPT share of its capacity (``_kept``)


class ReaderCache:
    """The visible edges one reader's recalls fetched (``EdgeCache``), by ``Names``, at one store
    revision, and the document frequencies its keyword scores read.

    Moved to a new revision without what its writes changed (``fresh``); started over when that is
    not known (a write listed no nodes, or the reader is too far behind), once the names its edges
    reach number ``names_capacity`` or its words ``capacity``; once it holds ``capacity`` nodes (a
    setting; the recall that fills it finishes in it, so it can hold more by what one recall
    fetched, itself at most ``neo4j_read_nodes``) it keeps the most used of them (``_kept``): no
    graph-sized state, never a stale edge. Handles and strengths stay each
    recall's own, so a recall walks exactly as it would with nothing cached (the same push schedule
    and tie order, whatever earlier recalls read)."""

    def __init__(self, capacity: int, revision: int, names_capacity: int) -> None:
        self.capacity, self.revision, self.names_capacity = capacity, revision, names_capacity
        self.edges = EdgeCache()
        self.names = Names()
        self.frequencies: dict[str, int] = {}  # quoted word -> visible passages holding it (BM25)

    def fresh(self, revision: int, store: Changes) -> ReaderCache:
        """This cache at ``revision`` if not full, else an empty one. When the revision moved, a copy
        without the edges of the nodes the writes since changed (``store.changes(since, until)``: each
        write's, None when unknown), and with those nodes' strengths read again where other nodes'
        edges reach them, so a recall after a write reads only what the write moved; the document
        frequencies are not kept (any new passage may move them)."""
        if len(self.names) >= self.names_capacity or len(self.frequencies) >= self.capacity \
                or revision < self.revision:
            return ReaderCache(self.capacity, revision, self.names_capacity)
        cache = self if len(self.edges) < self.capacity else self._kept()
        if revision == cache.revision:
            return cache
        writes = store.changes(cache.revision, revision)
        if writes is None or any(nodes is None for nodes in writes):
            return ReaderCache(self.capacity, revision, self.names_capacity)
        index, ids = cache.names.index, cache.names.ids
        touched = np.array(sorted({index[rid] for nodes in writes for rid in nodes if rid in index}), dtype=np.int64)
        found = store.strengths([ids[n] for n in touched.tolist()])
        totals = np.array([np.nan if found.get(ids[n]) is None else found[ids[n]] for n in touched.tolist()])
        moved = ReaderCache(self.capacity, revision, self.names_capacity)
        moved.names, moved.edges = cache.names, cache.edges.without(touched, totals)
        return moved

    def _kept(self) -> ReaderCache:
        """This cache, full, down to the edges of its ``capacity // KEPT`` most used nodes: the hubs
        most recalls walk through. Started over instead, a 100k-passage store's recalls (200k nodes)
        found 25 % of the nodes they walked uncached just before and 48 % just after, and waited 35-40 %
        longer for frontier reads in a long run (README, "Store-side reads")."""
        kept = ReaderCache(self.capacity, self.revision, self.names_capacity)
        kept.names, kept.frequencies = self.names, self.frequencies
        kept.edges = self.edges.most_used(self.capacity // KEPT)
        return kept


class Changes(Protocol):
    """What ``ReaderCache.fresh`` reads of the store when the revision moved (``Neo4jReader``'s)."""

    def changes(self, since: int, until: int) -> list[list[str] | None] | None: ...

    def strengths(self, ids: list[str]) -> dict[str, float | None]: ...


class PerNodeLookup:
    def __init__(self, lookup: Callable[[np.ndarray], np.ndarray]) -> None:
        self.lookup = lookup

    def __getitem__(self, nodes: Any) -> Any:
        if np.isscalar(nodes) or np.ndim(nodes) == 0:
            return self.lookup(np.array([int(nodes)], dtype=np.int64))[0]
        return self.lookup(np.asarray(nodes, dtype=np.int64))
