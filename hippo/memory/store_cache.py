"""What store-side recalls keep between queries (``hippo.memory.store_source``): handles, fetched edges.

Both are bounded by settings, not by the graph: a recall's ``NodeTable`` holds at
most ``neo4j_read_nodes`` handles, a reader's ``ReaderCache`` the edges of at most
``neo4j_read_cache`` nodes, for one store revision.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from hippo.errors import StoreError


class NodeTable:
    """Integer handles for the record ids one recall has seen; every passage handle is a visible passage."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.ids: list[str] = []
        self.index: dict[str, int] = {}
        self.passage = np.zeros(0, dtype=bool)
        self.count: dict[int, int] = {}  # entity handle -> visible passages mentioning it

    def handle(self, rid: str, passage: bool) -> int:
        found = self.index.get(rid)
        if found is not None:
            return found
        h = len(self.ids)
        if h >= self.capacity:
            raise StoreError(f"a store-side recall reached more than {self.capacity} nodes "
                             "(settings.neo4j_read_nodes, env HIPPO_NEO4J_READ_NODES)")
        if h >= len(self.passage):
            self.passage = np.concatenate([self.passage, np.zeros(max(64, h), dtype=bool)])
        self.passage[h] = passage
        self.ids.append(rid)
        self.index[rid] = h
        return h

    def handles(self, ids: list[str], passage: bool) -> np.ndarray:
        return np.array([self.handle(rid, passage) for rid in ids], dtype=np.int64)


@dataclass(frozen=True)
class Adjacent:
    """One node's visible edges, ready for a walk: target ids, which are passages, weights, kinds."""

    targets: list[str]
    passage: np.ndarray
    weights: np.ndarray
    kinds: np.ndarray
    passages: int  # visible passages mentioning it (an entity's specificity)


class ReaderCache:
    """The visible edges one reader's recalls fetched, by record id, at one store revision.

    At most ``capacity`` nodes (a setting), cleared when full and whenever the revision
    moves: no graph-sized state, never a stale edge. Handles and strengths stay each
    recall's own, so a recall walks exactly as it would with nothing cached (the same
    push schedule and tie order, whatever earlier recalls read)."""

    def __init__(self, capacity: int, revision: int) -> None:
        self.capacity, self.revision = capacity, revision
        self.edges: dict[str, Adjacent] = {}

    def fresh(self, revision: int) -> ReaderCache:
        """This cache if still valid for ``revision`` and not full, else an empty one."""
        if revision == self.revision and len(self.edges) < self.capacity:
            return self
        return ReaderCache(self.capacity, revision)


class PerNodeLookup:
    def __init__(self, lookup: Callable[[np.ndarray], np.ndarray]) -> None:
        self.lookup = lookup

    def __getitem__(self, nodes: Any) -> Any:
        if np.isscalar(nodes) or np.ndim(nodes) == 0:
            return self.lookup(np.array([int(nodes)], dtype=np.int64))[0]
        return self.lookup(np.asarray(nodes, dtype=np.int64))
