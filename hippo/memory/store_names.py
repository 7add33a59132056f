"""The names store-side recalls give the records they meet (``hippo.memory.store_cache``): record ids
as small integers, bound to the node ids a frontier read names its targets by.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Protocol

import numpy as np

from hippo.errors import StoreError
from hippo.graph.edges import MENTION, RELATION, SYNONYM
from hippo.int_map import IntMap
from hippo.store.neo4j.frontier import Frontier, Owners

if TYPE_CHECKING:
    from hippo.memory.store_cache import EdgeCache


class Names:
    """Record ids as small integers, shared by the recalls of one reader at one revision.

    Cached edges keep their targets as these integers, so a recall turns a cached
    node's edges into its own handles with one array lookup instead of a dict lookup
    per edge (that lookup was ~half the client CPU of a 10k-passage recall)."""

    def __init__(self) -> None:
        self.ids: list[str] = []
        self.index: dict[str, int] = {}
        self.keys = IntMap()  # a node's id in the store -> its integer (``bind``)
        self.passage = np.zeros(0, dtype=bool)
        self.node = np.zeros(0, dtype=np.int64)  # each integer's node id in the store, -1 until bound
        self._lock = threading.Lock()  # the recalls of one reader may run on several threads

    def __len__(self) -> int:
        return len(self.ids)

    def of(self, ids: list[str], passage: np.ndarray | bool) -> np.ndarray:
        """The integers of ``ids`` (new ones take the next), ``passage`` saying which are passages."""
        with self._lock:
            index, known = self.index, self.ids
            found = [index.get(rid, -1) for rid in ids]
            new = [i for i, n in enumerate(found) if n < 0]
            if new:
                for i in new:
                    n = index.get(ids[i])
                    if n is None:  # else the same id came twice among the new ones
                        n = index[ids[i]] = len(known)
                        known.append(ids[i])
                    found[i] = n
                if len(known) > len(self.passage):
                    grow = max(1024, len(known))
                    self.passage = np.concatenate([self.passage, np.zeros(grow, dtype=bool)])
                    self.node = np.concatenate([self.node, np.full(grow, -1, dtype=np.int64)])
                flags = np.broadcast_to(np.asarray(passage, dtype=bool), (len(ids),))
                self.passage[np.array([found[i] for i in new])] = flags[np.array(new)]
            return np.array(found, dtype=np.int64)

    def by_keys(self, keys: np.ndarray) -> np.ndarray:
        """The integers of the nodes with these node ids, -1 for a node not bound yet."""
        return self.keys.get(keys)

    def bind(self, keys: np.ndarray, names: np.ndarray) -> None:
        """Node ids to integers. A node id names one node while it exists, and hippo deletes no
        passage and no entity, so a binding holds at every revision (``read_keyed_nodes.cypher``)."""
        with self._lock:
            self.keys.put(keys, names)
            self.node[names] = keys

    def owners(self, names: np.ndarray) -> tuple[Owners, Owners]:
        """The passages and the entities among ``names`` as a frontier read takes them, keyed by their
        integers (with their node ids where bound)."""
        names = np.asarray(names, dtype=np.int64)
        nodes = self.node[names]
        ids = self.ids
        records = np.array([ids[n] for n in names.tolist()], dtype=object)
        passage = self.passage[names]
        return (Owners(names[passage], records[passage], nodes[passage]),
                Owners(names[~passage], records[~passage], nodes[~passage]))


class Keyed(Protocol):
    """``Neo4jReader.keyed``: node id -> (record id, strength over every edge) of these nodes."""

    def __call__(self, keys: list[int], *, mention_weight: float,
                 relation_weight: float) -> dict[int, tuple[str, float | None]]: ...


def named_edges(names: Names, cache: EdgeCache, owners: np.ndarray, found: Frontier, keyed: Keyed,
                mention_weight: float, relation_weight: float) -> tuple[np.ndarray, ...]:
    """The edges read for ``owners`` (``names`` integers) as ``cache.add`` takes them: targets as
    ``names`` integers, weighted as in process (relation and mention weights, synonym scores). Targets
    come by node id; the ones not bound to a name yet, or whose strength over every edge ``cache``
    has not learnt, are looked up at once (``keyed``: one round trip) and learnt."""
    edges = found.aligned(owners)
    counts, keys = edges.counts, edges.targets
    part = np.repeat(np.tile(np.arange(4), len(counts)), counts.ravel())  # 0-3: the four kinds of a Frontier
    targets = names.by_keys(keys)
    bound = targets >= 0
    bound[bound] = cache.learned(targets[bound])
    if not bound.all():
        unknown = np.flatnonzero(~bound).tolist()
        ask = dict(zip(keys[unknown].tolist(), (part[~bound] == 1).tolist(), strict=True))
        read = keyed(list(ask), mention_weight=mention_weight, relation_weight=relation_weight)
        if any(key not in read for key in ask):
            raise StoreError("a node a frontier read named is gone from the store; hippo deletes no passage "
                             "and no entity, so something else wrote to this database")
        ids, totals = zip(*(read[key] for key in ask), strict=True)
        learnt = names.of(list(ids), np.fromiter(ask.values(), dtype=bool, count=len(ask)))
        cache.learn(learnt, np.array([np.nan if t is None else t for t in totals], dtype=np.float64))
        names.bind(np.fromiter(ask, dtype=np.int64, count=len(ask)), learnt)  # after ``learn``: a name
        targets[unknown] = names.by_keys(keys[unknown])  # bound is a strength learnt
    weights = np.array([mention_weight, mention_weight, relation_weight, 0.0])[part]
    weights[part == 3] = edges.scores
    kinds = np.array([MENTION, MENTION, RELATION, SYNONYM], dtype=np.int8)[part]
    return counts.sum(axis=1), targets, weights, kinds, counts[:, 1]
