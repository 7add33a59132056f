"""The derived, in-process indexes of one store: graph projection and vectors.

They are caches. ``DerivedState.load`` rebuilds them from the store; after the
engine's own writes ``apply`` updates them incrementally; a revision that moved
under us (another process wrote) means a reload.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from hippo.config import Settings
from hippo.errors import StoreError
from hippo.graph.projection import GraphProjection
from hippo.memory.vectors import VectorIndex
from hippo.store.base import GraphData, Store, WriteBatch, embed_hash


@dataclass
class DerivedState:
    revision: int
    projection: GraphProjection
    passages: VectorIndex
    entities: VectorIndex
    facts: VectorIndex
    # Per fact row: (subject id, object id, passage id), aligned with ``facts``.
    fact_ends: list[tuple[str, str, str]] = field(default_factory=list)

    @classmethod
    def load(cls, store: Store, dim: int, settings: Settings, attempts: int = 5) -> DerivedState:
        """Read the graph and vectors as of one revision.

        The reads are separate calls, so a writer in another process could land
        between them; writes bump the revision atomically, so an unchanged
        revision around the reads proves they saw one state.
        """
        for _ in range(attempts):
            before = store.revision()
            try:
                state = cls._read(store, dim, settings, before)
            except KeyError:  # vectors of a fact the graph read did not see yet: a write landed
                continue
            if store.revision() == before:
                return state
        raise StoreError(f"store {store.url} kept changing while hippo loaded it ({attempts} attempts)")

    @classmethod
    def _read(cls, store: Store, dim: int, settings: Settings, revision: int) -> DerivedState:
        data = store.load_graph()
        state = cls(
            revision=revision,
            projection=GraphProjection.from_data(
                data, relation_weight=settings.relation_weight, mention_weight=settings.mention_weight
            ),
            passages=VectorIndex(dim),
            entities=VectorIndex(dim),
            facts=VectorIndex(dim),
        )
        for kind, index in (("passage", state.passages), ("entity", state.entities), ("fact", state.facts)):
            ids, hashes, matrix = store.load_vectors(kind)
            index.add(ids, hashes, matrix)
        ends = {fid: (s, o, p) for fid, s, o, p in data.facts}
        state.fact_ends = [ends[fid] for fid in state.facts.ids]
        return state

    def apply(self, batch: WriteBatch, vectors: dict[str, np.ndarray], revision: int) -> None:
        """Add what a successful write added. ``vectors`` holds every record's vector by hash."""
        known = self.projection.vertex
        passages = [p for p in batch.passages if p.id not in known]
        entities = [e for e in batch.entities if e.id not in known]
        fresh_passages = {p.id for p in passages}
        facts = [f for f in batch.facts if f.passage_id in fresh_passages]
        self.projection.add(GraphData(
            passages=[(p.id, p.space) for p in passages],
            entities=[e.id for e in entities],
            facts=[(f.id, f.subject_id, f.object_id, f.passage_id) for f in facts],
            mentions=[(m.passage_id, m.entity_id) for m in batch.mentions if m.passage_id in fresh_passages],
            synonyms=[(s.a, s.b, s.score) for s in batch.synonyms],
        ))
        for index, records in ((self.passages, passages), (self.entities, entities), (self.facts, facts)):
            hashes = [embed_hash(r) for r in records]
            if records:
                index.add([r.id for r in records], hashes, np.stack([vectors[h] for h in hashes]))
        self.fact_ends.extend((f.subject_id, f.object_id, f.passage_id) for f in facts)
        self.revision = revision
        for derived in ("passage_vertex_of_row", "entity_vertex_of_row", "fact_passage_vertex"):
            self.__dict__.pop(derived, None)

    @cached_property
    def passage_vertex_of_row(self) -> np.ndarray:
        """Graph vertex of each row of ``passages``."""
        return np.array([self.projection.vertex[i] for i in self.passages.ids], dtype=np.int64)

    @cached_property
    def entity_vertex_of_row(self) -> np.ndarray:
        """Graph vertex of each row of ``entities`` (-1: no live passage mentions it)."""
        return np.array([self.projection.vertex.get(i, -1) for i in self.entities.ids], dtype=np.int64)

    @cached_property
    def fact_passage_vertex(self) -> np.ndarray:
        """Graph vertex of each fact's passage, aligned with ``facts``."""
        vertex = self.projection.vertex
        return np.array([vertex.get(p, -1) for _, _, p in self.fact_ends], dtype=np.int64)
