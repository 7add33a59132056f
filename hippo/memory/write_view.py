"""What a write plans on: the stored entities near the ones it adds, what retiring passages
takes out of a reader's view, the passages near a new memory, and what still waits for a vector.

In process that is the derived state (``LocalView``). In store-side read mode
(``HIPPO_NEO4J_READ=store``) the store itself answers (``StoreView``), a few
bounded reads per write, so a process that writes never builds a copy of the
graph: its memory does not grow with the store, as its recalls' does not.
Both answer the same questions the same way; ``tests/test_neo4j_writes.py``
holds them to it.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any, Protocol

import numpy as np

from hippo.graph.projection import Impact
from hippo.memory.state import DerivedState
from hippo.memory.store_reads import StoreReads
from hippo.models import Entity, Fact, Passage
from hippo.store.base import Spaces, Store, VectorKind, embed_hash

SYNONYM_PROBE = 16  # neighbours searched first per new entity (most have far fewer synonyms)
Record = Passage | Entity | Fact
Neighbours = list[tuple[list[str], np.ndarray]]  # per query: stored entity ids, best first, and their vectors


class WriteView(Protocol):
    revision: int

    def entity_neighbours(self, queries: np.ndarray, k: int, threshold: float) -> Neighbours:
        """Each query's ``k`` nearest stored entities with a live passage (any space), or all of them
        above ``threshold`` when fewer, with their vectors in float64."""

    def impact(self, passage_ids: list[str], spaces: Spaces) -> Impact:
        """What retiring these live passages takes out of the graph a reader of ``spaces`` sees."""

    def near_passages(self, vector: np.ndarray, space: str, limit: int) -> list[tuple[str, float]]:
        """The live passages of ``space`` nearest to ``vector``: (id, cosine), best first."""

    def vector_of(self, passage: Passage) -> np.ndarray | None:
        """The stored passage's vector, None while it waits for one."""

    @property
    def unembedded(self) -> set[tuple[VectorKind, str]]:
        """Records written without a vector (an embedding that timed out), waiting for one."""

    def waiting(self, records: list[Record]) -> list[Record]:
        """Those of ``records`` that still wait for a vector (``unembedded`` for just these: no scan)."""


def record_kind(record: Record) -> VectorKind:
    return type(record).__name__.lower()  # type: ignore[return-value]


def nearest_widening(search: Any, queries: np.ndarray, k: int, threshold: float) -> list[Any]:
    """``search(queries, k)`` per query as (scores, ...), short first: widened to ``k`` only where the
    last of the first ``SYNONYM_PROBE`` still reaches ``threshold``."""
    first = min(k, SYNONYM_PROBE)
    found = search(queries, first)
    wide = [i for i, (scores, *_) in enumerate(found) if len(scores) == first and scores[-1] >= threshold]
    if wide and first < k:
        for i, result in zip(wide, search(queries[wide], k), strict=True):
            found[i] = result
    return found


class LocalView:
    """The derived state, as a write reads it."""

    def __init__(self, state: DerivedState, store: Store) -> None:
        self.state, self.store, self.revision = state, store, state.revision

    def entity_neighbours(self, queries: np.ndarray, k: int, threshold: float) -> Neighbours:
        found = nearest_widening(lambda q, n: self.state.entities.search(q, n, near=True), queries, k, threshold)
        ids, vectors = self.state.projection.record_ids, self.state.entities.vectors_of
        return [([ids[v] for v in labels.tolist()], vectors(labels).astype(np.float64)) for _, labels in found]

    def impact(self, passage_ids: list[str], spaces: Spaces) -> Impact:
        return self.state.projection.impact(passage_ids, spaces)

    def near_passages(self, vector: np.ndarray, space: str, limit: int) -> list[tuple[str, float]]:
        projection = self.state.projection
        code = projection.view(frozenset({space})).codes
        # The space's own shard holds exactly its live passages: its nearest are the candidates.
        (sims, vertices), = self.state.passages.search(vector, limit, code)
        return [(projection.record_ids[v], float(s)) for s, v in zip(sims.tolist(), vertices.tolist(), strict=True)]

    def vector_of(self, passage: Passage) -> np.ndarray | None:
        if ("passage", passage.id) in self.unembedded or passage.id not in self.state.projection.vertex:
            return None
        return self.store.vectors([embed_hash(passage)]).get(embed_hash(passage))

    @property
    def unembedded(self) -> set[tuple[VectorKind, str]]:
        return self.state.unembedded

    def waiting(self, records: list[Record]) -> list[Record]:
        return [r for r in records if (record_kind(r), r.id) in self.state.unembedded]


class StoreView:
    """The store itself, as a write reads it in store-side read mode: one view per write attempt."""

    def __init__(self, store: Store, reads: StoreReads) -> None:
        self.store, self.reads = store, reads

    @cached_property
    def revision(self) -> int:  # read only by a plan that writes nothing (Engine.write)
        return self.store.revision()

    def entity_neighbours(self, queries: np.ndarray, k: int, threshold: float) -> Neighbours:
        source = self.reads.source(None)

        def search(q: np.ndarray, n: int) -> list[tuple[list[float], list[str]]]:
            return [([r[1] for r in rows], [r[0] for r in rows]) for rows in source.search_rows("entities", q, n)]

        queries = np.atleast_2d(np.asarray(queries, dtype=np.float64))
        found = nearest_widening(search, queries, k, threshold)
        named = {e.id: embed_hash(e) for e in self.store.entities({i for _, ids in found for i in ids})}
        vectors = self.store.vectors(set(named.values()))
        dim = queries.shape[1]
        return [(ids, np.array([vectors[named[i]] for i in ids], dtype=np.float64).reshape(len(ids), dim))
                for _, ids in found]

    def impact(self, passage_ids: list[str], spaces: Spaces) -> Impact:
        facts, entities, edges = self.store.reader(spaces).impact(passage_ids)  # type: ignore[attr-defined]
        return Impact(facts=facts, entities=entities, edges=edges)

    def near_passages(self, vector: np.ndarray, space: str, limit: int) -> list[tuple[str, float]]:
        [rows] = self.reads.source(frozenset({space})).search_rows("passages", np.atleast_2d(vector), limit)
        return [(r[0], float(r[1])) for r in rows]

    def vector_of(self, passage: Passage) -> np.ndarray | None:
        return self.store.vectors([embed_hash(passage)]).get(embed_hash(passage))

    @cached_property
    def unembedded(self) -> set[tuple[VectorKind, str]]:
        return self.store.reader(None).unembedded()  # type: ignore[attr-defined]

    def waiting(self, records: list[Record]) -> list[Record]:
        held = self.store.vectors({embed_hash(r) for r in records})  # what read_unembedded looks for
        return [r for r in records if embed_hash(r) not in held]
