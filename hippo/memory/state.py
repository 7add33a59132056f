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
from hippo.memory.keywords import KeywordIndex
from hippo.memory.titles import TitleIndex
from hippo.memory.vectors import VectorIndex
from hippo.models import Entity, Fact, Passage
from hippo.store.base import GraphData, Store, VectorKind, WriteBatch, embed_hash


@dataclass
class DerivedState:
    revision: int
    projection: GraphProjection
    passages: VectorIndex
    entities: VectorIndex
    facts: VectorIndex
    keywords: KeywordIndex = field(default_factory=KeywordIndex)  # BM25 rows are passage vertices
    titles: TitleIndex = field(default_factory=TitleIndex)  # passage titles -> passage vertices
    # Per fact row: (subject id, object id, passage id), aligned with ``facts``.
    fact_ends: list[tuple[str, str, str]] = field(default_factory=list)
    # Graph records stored without a vector yet (a remember whose embedding timed out):
    # (kind, id). They are in the graph and the keyword index, not in vector search.
    unembedded: set[tuple[VectorKind, str]] = field(default_factory=set)

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
        vertex = state.projection.vertex
        for pid, text in data.texts.items():
            state.keywords.add(vertex[pid], text)
        for pid, title in data.titles.items():
            state.titles.add(vertex[pid], title)
        for kind, ids, index in (("passage", [pid for pid, _ in data.passages], state.passages),
                                 ("entity", data.entities, state.entities),
                                 ("fact", [f[0] for f in data.facts], state.facts)):
            embedded = set(index.ids)
            state.unembedded.update((kind, rid) for rid in ids if rid not in embedded)
        return state

    def apply(self, batch: WriteBatch, vectors: dict[str, np.ndarray], revision: int) -> bool:
        """Follow a successful write: add what it added, retire and revive what it did.

        ``vectors`` holds the vectors known by hash; records without one are
        kept for a later embedding. False means the write cannot be followed
        in place (it revived passages this state never held): reload instead.
        """
        known = self.projection.vertex
        if batch.revive and any(pid not in known for pid in batch.revive):
            return False
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
        for p in passages:
            self.keywords.add(known[p.id], p.embed_text)
            if p.title:
                self.titles.add(known[p.id], p.title)
        self.projection.retire(batch.retire)
        self.projection.revive(batch.revive)
        self.add_vectors([*passages, *entities, *facts], vectors)
        self.revision = revision
        return True

    def apply_late_vectors(self, records: list[Passage | Entity | Fact], vectors: dict[str, np.ndarray],
                           synonyms: list[tuple[str, str, float]], revision: int) -> None:
        """Follow a write that only added vectors (and synonym edges) for stored records."""
        self.projection.add(GraphData(passages=[], entities=[], facts=[], mentions=[], synonyms=synonyms))
        self.add_vectors(records, vectors)
        self.revision = revision

    def add_vectors(self, records: list[Passage | Entity | Fact], vectors: dict[str, np.ndarray]) -> None:
        """Put records new to vector search into it; those without a vector wait in ``unembedded``."""
        for kind, index, of_kind in (("passage", self.passages, Passage), ("entity", self.entities, Entity),
                                     ("fact", self.facts, Fact)):
            chosen = [r for r in records if isinstance(r, of_kind)]
            ready = [r for r in chosen if embed_hash(r) in vectors]
            self.unembedded.update((kind, r.id) for r in chosen if embed_hash(r) not in vectors)
            if not ready:
                continue
            hashes = [embed_hash(r) for r in ready]
            index.add([r.id for r in ready], hashes, np.stack([vectors[h] for h in hashes]))
            self.unembedded.difference_update((kind, r.id) for r in ready)
            if kind == "fact":
                self.fact_ends.extend((f.subject_id, f.object_id, f.passage_id) for f in ready)
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
