"""The derived, in-process indexes of one store: graph projection, vectors, keywords.

They are caches. ``DerivedState.load`` rebuilds them from the store (or, with
``hippo.memory.persist``, opens the copy saved beside it); after the engine's
own writes ``apply`` updates them in place in O(what was written); a revision
that moved under us (another process wrote) means a reload.

Vector labels: passages and entities by graph vertex, facts by fact row
(``projection.fact_ids``). A passage or fact is in the search shard of its
space while its passage is live; an entity in the shard of every space whose
live passages mention it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from hippo.columns import StringIndex
from hippo.config import Settings
from hippo.errors import StoreError
from hippo.graph.projection import GraphProjection
from hippo.memory.ann import AnnSettings
from hippo.memory.delta import Delta
from hippo.memory.keywords import KeywordIndex
from hippo.memory.titles import TitleIndex
from hippo.memory.vectors import VectorIndex
from hippo.models import Entity, Fact, Passage
from hippo.store.base import GraphData, Store, VectorKind, WriteBatch


def text_key(hashes: Sequence[str]) -> np.ndarray:
    """64 bits of each text hash: equal texts, equal keys (dedup of facts read twice)."""
    return np.array([int(h[:16], 16) for h in hashes], dtype=np.uint64)


def ann_settings(settings: Settings, kind: VectorKind | None = None) -> AnnSettings:
    """The search settings of one kind's vectors: entities are searched by a question's phrases,
    which noisy copies of held vectors stand for, so their ``ef`` is not fitted to blends too."""
    return AnnSettings(exact_max=settings.vector_exact_max, recall=settings.vector_recall,
                       rerank=settings.vector_rerank, blends=kind != "entity",
                       wide_build_from=settings.vector_wide_from, wide_links=settings.vector_wide_links,
                       graph_rows=settings.vector_graph_rows)


class FactEnds(Sequence[tuple[str, str, str]]):
    """``state.fact_ends[row]``: (subject id, object id, passage id) of a fact row."""

    def __init__(self, projection: GraphProjection) -> None:
        self._p = projection

    def __len__(self) -> int:
        return len(self._p.fact_ids)

    def __getitem__(self, row):  # noqa: ANN001
        p = self._p
        ids = p.record_ids
        s, o, v = int(p.fact_subject[row]), int(p.fact_object[row]), int(p.fact_passage[row])
        return (ids[s] if s >= 0 else "", ids[o] if o >= 0 else "", ids[v])


@dataclass
class DerivedState:
    revision: int
    projection: GraphProjection
    passages: VectorIndex
    entities: VectorIndex
    facts: VectorIndex
    keywords: KeywordIndex = field(default_factory=KeywordIndex)  # BM25 rows are passage vertices
    titles: TitleIndex = field(default_factory=TitleIndex)  # passage titles -> passage vertices
    # Graph records stored without a vector yet (a remember whose embedding timed out):
    # (kind, id). They are in the graph and the keyword index, not in vector search.
    unembedded: set[tuple[VectorKind, str]] = field(default_factory=set)

    def vector_indexes(self) -> tuple[tuple[VectorKind, VectorIndex], ...]:
        """Each kind's vector index, in ``KINDS`` order."""
        return ("passage", self.passages), ("entity", self.entities), ("fact", self.facts)

    @classmethod
    def empty(cls, dim: int, settings: Settings, revision: int = 0) -> DerivedState:
        return cls(revision=revision,
                   projection=GraphProjection(relation_weight=settings.relation_weight,
                                              mention_weight=settings.mention_weight),
                   passages=VectorIndex(dim, ann_settings(settings, "passage")),
                   entities=VectorIndex(dim, ann_settings(settings, "entity")),
                   facts=VectorIndex(dim, ann_settings(settings, "fact")))

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
        state = cls.empty(dim, settings, revision)
        state.projection.add(data)
        state.projection.moves.clear()  # shards are filled below, from the counts
        p = state.projection
        vertex = p.vertex
        for pid, text in data.texts.items():
            state.keywords.add(vertex[pid], text, int(p.space_code[vertex[pid]]))
        for pid, title in data.titles.items():
            state.titles.add(vertex[pid], title)
        live = {"passage": np.array([vertex[pid] for pid, _ in data.passages], dtype=np.int64),
                "entity": np.array([vertex[e] for e in data.entities], dtype=np.int64),
                "fact": np.arange(len(p.fact_ids), dtype=np.int64)}
        # The graph as Python objects goes before the vectors are read, and they are read a part at a
        # time, not a kind at once as float32 (10M facts: 15 GB): the rebuild of a 100k-passage store
        # (1M facts) peaked at 4,621 MB, 5,359 before. What stays is the vectors as kept, then graphs.
        del data
        fact_row = StringIndex(p.fact_ids)
        for kind, index in state.vector_indexes():
            where = fact_row if kind == "fact" else vertex
            for ids, hashes, matrix in store.vector_batches(kind):
                labels = where.positions(ids)
                known = labels >= 0
                if kind == "fact" and not known.all():
                    raise KeyError("fact vectors ahead of the graph")
                index.add(labels[known], text_key([h for h, k in zip(hashes, known.tolist(), strict=True) if k]),
                          matrix if known.all() else matrix[known])
            missing = live[kind][~index.has(live[kind])]
            ids_of = p.fact_ids if kind == "fact" else p.record_ids
            state.unembedded.update((kind, ids_of[int(label)]) for label in missing)
        state._place_passages(live["passage"])
        entities = live["entity"]
        for code in range(len(p.space_names)):
            state.entities.include(code, entities[p.support.counts(np.array([code]), entities) > 0])
        return state

    # -- following writes ----------------------------------------------------------

    def apply(self, batch: WriteBatch, vectors: dict[str, np.ndarray], revision: int,
              texts: dict[str, str] | None = None) -> bool:
        """Follow a successful write (see ``apply_delta``)."""
        return self.apply_delta(Delta.of_batch(batch, vectors, revision, texts))

    def apply_late_vectors(self, records: list[Passage | Entity | Fact], vectors: dict[str, np.ndarray],
                           synonyms: list[tuple[str, str, float]], revision: int) -> None:
        """Follow a write that only added vectors (and synonym edges) for stored records."""
        self.apply_delta(Delta.of_late(records, vectors, synonyms, revision))

    def apply_delta(self, delta: Delta) -> bool:
        """Follow a write: add what it added, retire and revive what it did, in O(what it wrote).

        Records without a vector are kept for a later embedding. False means
        the write cannot be followed in place (it revived passages this state
        never held): reload instead.
        """
        p = self.projection
        known = p.vertex
        if delta.revive and any(pid not in known for pid in delta.revive):
            return False
        if delta.late:
            p.add(GraphData(passages=[], entities=[], facts=[], mentions=[], synonyms=delta.synonyms))
            wanted = {rid for rid, _ in delta.records.get("fact", [])}
            rows = {fid: row for row, fid in enumerate(p.fact_ids.to_list()) if fid in wanted} if wanted else {}
            self._add_vectors(delta, rows, late=True)
            self.revision = delta.revision
            return True
        passages = [x for x in dict.fromkeys(delta.passages) if x[0] not in known]
        fresh = {pid for pid, _, _ in passages}
        first_fact = len(p.fact_ids)
        p.add(GraphData(
            passages=[(pid, space) for pid, space, _ in passages],
            entities=[e for e in delta.entities if e not in known],
            facts=[f for f in delta.facts if f[3] in fresh],
            mentions=[m for m in delta.mentions if m[0] in fresh],
            synonyms=delta.synonyms,
        ))
        for pid, _, text in passages:
            self.keywords.add(known[pid], text, int(p.space_code[known[pid]]))
            if pid in delta.titles:
                self.titles.add(known[pid], delta.titles[pid])
        rows = {p.fact_ids[row]: row for row in range(first_fact, len(p.fact_ids))}
        self._add_vectors(delta, rows, fresh=fresh)
        self._set_live(delta.retire, False, delta.texts)
        self._set_live(delta.revive, True, delta.texts)
        self.revision = delta.revision
        return True

    def _set_live(self, passage_ids: list[str], live: bool, texts: dict[str, str]) -> None:
        p = self.projection
        changing = [pid for pid in dict.fromkeys(passage_ids)
                    if pid in p.vertex and p.is_passage[p.vertex[pid]] and bool(p.live[p.vertex[pid]]) != live]
        if not changing:
            return
        (p.revive if live else p.retire)(changing)
        for pid in changing:
            v = p.vertex[pid]
            if pid in texts:
                self.keywords.set_live(texts[pid], int(p.space_code[v]), live)
        self._place_passages(np.array([p.vertex[pid] for pid in changing], dtype=np.int64))

    def _place_passages(self, vertices: np.ndarray) -> None:
        """Put passages (and their facts) in or out of their space's shard, by liveness;
        then follow the entity moves the projection recorded."""
        p = self.projection
        for code in np.unique(p.space_code[vertices]).tolist() if len(vertices) else []:
            mine = vertices[p.space_code[vertices] == code]
            rows = np.concatenate([p.facts_of(int(v)) for v in mine]) if len(mine) else np.zeros(0, np.int64)
            live = p.live[mine]
            fact_live = p.live[p.fact_passage[rows]] if len(rows) else np.zeros(0, bool)
            self.passages.include(code, mine[live])
            self.passages.exclude(code, mine[~live])
            self.facts.include(code, rows[fact_live])
            self.facts.exclude(code, rows[~fact_live])
        self._follow_moves()

    def _follow_moves(self) -> None:
        for code, gained, lost in self.projection.moves:
            self.entities.include(code, gained)
            self.entities.exclude(code, lost)
        self.projection.moves.clear()

    def _add_vectors(self, delta: Delta, fact_rows: dict[str, int], *, fresh: set[str] | None = None,
                     late: bool = False) -> None:
        """Put the write's records new to vector search into it; those without a vector wait."""
        p = self.projection
        for kind, index in (("passage", self.passages), ("entity", self.entities), ("fact", self.facts)):
            where = fact_rows if kind == "fact" else p.vertex
            if kind == "fact" and fresh is not None:  # facts follow only passages new to this state
                graph = {f[0] for f in delta.facts if f[3] in fresh}
            else:
                graph = None
            self.unembedded.update((kind, rid) for rid in delta.waiting(kind)
                                   if rid in where and (graph is None or rid in graph))
            ids, hashes, matrix = delta.vector_rows(kind)
            chosen = [i for i, rid in enumerate(ids) if rid in where and (graph is None or rid in graph)]
            if not chosen:
                continue
            labels = np.array([where[ids[i]] for i in chosen], dtype=np.int64)
            matrix = matrix[chosen]
            added = index.add(labels, text_key([hashes[i] for i in chosen]), matrix)
            self.unembedded.difference_update((kind, ids[i]) for i in chosen)
            if not len(added):
                continue
            if kind == "entity":
                for label in labels.tolist() if late else []:
                    for code in p.support.spaces_of(label):
                        index.include(code, np.array([label]))
            else:
                passage = labels if kind == "passage" else p.fact_passage[labels].astype(np.int64)
                for code in np.unique(p.space_code[passage]).tolist():
                    mine = (p.space_code[passage] == code) & p.live[passage]
                    index.include(code, labels[mine], matrix[mine])
        self._follow_moves()

    # -- reading -------------------------------------------------------------------

    @property
    def fact_ends(self) -> FactEnds:
        return FactEnds(self.projection)

    @property
    def fact_ids(self):  # noqa: ANN201 - a StringTable: ``state.fact_ids[row]``
        return self.projection.fact_ids

    def fact_vertices(self, row: int) -> list[int]:
        """The subject and object vertices of a fact row."""
        p = self.projection
        return [v for v in (int(p.fact_subject[row]), int(p.fact_object[row])) if v >= 0]
