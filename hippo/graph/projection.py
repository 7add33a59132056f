"""The in-process projection of the store's graph, kept as columns and CSR runs.

Vertices are passages and entities; edges are relations (one per supporting
fact), mentions (passage-entity) and synonyms. Vertex ids never change once
given, and nothing is removed: a forgotten passage is marked not live, and a
reader's view (``hippo.graph.view``) skips what it may not walk.

Every write costs O(what it writes): vertices and facts are appended,
edges go to ``EdgeRuns`` (sorted runs merged by size), the per-space entity
counts (``SpaceSupport``) move by the mentions touched. igraph, the graph
library, builds the exact reference of a view on demand (``GraphView.graph``);
it is not the live store because its ``add_edges`` re-sorts every edge per
call, O(E) per write.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field
from itertools import chain
from typing import TYPE_CHECKING

import numpy as np

from hippo.columns import Column, StringIndex, StringTable
from hippo.graph.edges import KIND_NAMES, MENTION, NO_PASSAGE, RELATION, SYNONYM, EdgeRuns
from hippo.graph.hidden import touched_by, unwalkable, with_synonyms
from hippo.graph.support import SpaceSupport
from hippo.runs import Run
from hippo.store.base import GraphData, Spaces

if TYPE_CHECKING:
    from hippo.graph.view import GraphView

MAX_VIEWS = 64  # cached read-sets (a view caches its exact transition matrix)


@dataclass(frozen=True)
class Impact:
    """The derived records that follow passages out of the live graph."""

    facts: list[str]  # fact ids read from the passages
    entities: list[str]  # entity ids no other live passage mentions
    edges: dict[str, int]  # edges leaving the walk, by kind


@dataclass
class GraphProjection:
    relation_weight: float = 1.0
    mention_weight: float = 1.0
    record_ids: StringTable = field(default_factory=StringTable)  # vertex -> record id
    is_passage: Column = field(default_factory=lambda: Column(bool))
    live: Column = field(default_factory=lambda: Column(bool))  # False: a retired (tombstoned) passage
    space_code: Column = field(default_factory=lambda: Column(np.int32))  # -1 for entities
    space_names: list[str] = field(default_factory=list)
    edges: EdgeRuns = field(default_factory=EdgeRuns)
    strength: Column = field(default_factory=lambda: Column(np.float64))  # every edge: a bound of any view's
    hidden: Column = field(default_factory=lambda: Column(np.float64))  # what no reader walks (``graph.hidden``)
    support: SpaceSupport = field(default_factory=SpaceSupport)
    fact_ids: StringTable = field(default_factory=StringTable)
    fact_subject: Column = field(default_factory=lambda: Column(np.int32))
    fact_object: Column = field(default_factory=lambda: Column(np.int32))
    fact_passage: Column = field(default_factory=lambda: Column(np.int32))
    fact_first: Column = field(default_factory=lambda: Column(np.int64))  # per vertex: its first fact row
    fact_count: Column = field(default_factory=lambda: Column(np.int32))  # per vertex: facts read from it
    kind_counts: np.ndarray = field(default_factory=lambda: np.zeros(3, dtype=np.int64))
    retired: int = 0  # passages not live
    moves: list[tuple[int, np.ndarray, np.ndarray]] = field(default_factory=list)  # (space, gained, lost)
    version: int = 0  # moves on every change; views are cached by it
    _space_index: dict[str, int] = field(default_factory=dict)
    _views: dict[Spaces, GraphView] = field(default_factory=dict, repr=False)
    _views_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    vertex: StringIndex = field(init=False, repr=False)  # record id -> vertex

    def __post_init__(self) -> None:
        self.vertex = StringIndex(self.record_ids)

    @classmethod
    def from_data(cls, data: GraphData, *, relation_weight: float = 1.0,
                  mention_weight: float = 1.0) -> GraphProjection:
        projection = cls(relation_weight=relation_weight, mention_weight=mention_weight)
        projection.add(data)
        return projection

    # -- building ----------------------------------------------------------------

    @property
    def vertex_count(self) -> int:
        return len(self.record_ids)

    def code_of(self, space: str) -> int:
        code = self._space_index.get(space)
        if code is None:
            code = self._space_index[space] = len(self.space_names)
            self.space_names.append(space)
        return code

    def known_code(self, space: str) -> int | None:
        """The code of a space this projection holds, else None (unlike ``code_of``, never adds one)."""
        return self._space_index.get(space)

    def space_of(self, v: int) -> str | None:
        code = int(self.space_code[v])
        return self.space_names[code] if code >= 0 else None

    def _new_vertices(self, ids: list[str], passage: bool, codes: list[int]) -> None:
        start = len(self.record_ids)
        for i, rid in enumerate(ids):
            self.vertex[rid] = start + i
        self.record_ids.append(ids)
        self.is_passage.append(np.full(len(ids), passage))
        self.live.append(np.ones(len(ids), dtype=bool))
        self.space_code.append(codes)
        n = len(self.record_ids)
        for column in (self.strength, self.hidden, self.fact_count):
            column.extend_to(n)
        self.fact_first.extend_to(n, -1)

    def add(self, data: GraphData) -> None:
        """Add new vertices and edges (records already present are skipped by the caller)."""
        existing = self.vertex_count
        passages = [(pid, space) for pid, space in data.passages if pid not in self.vertex]
        self._new_vertices([pid for pid, _ in passages], True, [self.code_of(s) for _, s in passages])
        entities = [e for e in dict.fromkeys(data.entities) if e not in self.vertex]
        self._new_vertices(entities, False, [-1] * len(entities))
        v = self.vertex.found(chain.from_iterable(chain((f[1:] for f in data.facts), data.mentions,
                                                        ((a, b) for a, b, _ in data.synonyms))))
        facts = sorted(((v[p], fid, v.get(s, -1), v.get(o, -1)) for fid, s, o, p in data.facts if p in v),
                       key=lambda f: f[0])
        self._add_facts(facts)
        relations = np.array([(s, o, p) for p, _, s, o in facts if s >= 0 and o >= 0 and s != o],
                             dtype=np.int64).reshape(-1, 3)
        mentions = np.array(sorted({(v[p], v[e]) for p, e in data.mentions if p in v and e in v}),
                            dtype=np.int64).reshape(-1, 2)
        synonyms = [(v[a], v[b], score) for a, b, score in data.synonyms if a in v and b in v]
        syn = np.array([(a, b) for a, b, _ in synonyms], dtype=np.int64).reshape(-1, 2)
        parts = [
            (relations[:, 0], relations[:, 1], np.full(len(relations), self.relation_weight), relations[:, 2],
             RELATION),
            (mentions[:, 0], mentions[:, 1], np.full(len(mentions), self.mention_weight), mentions[:, 0], MENTION),
            (syn[:, 0], syn[:, 1], np.array([s for _, _, s in synonyms], dtype=np.float64),
             np.full(len(syn), NO_PASSAGE), SYNONYM),
        ]
        for a, b, weights, via, kind in parts:
            if len(a):
                self.edges.add_edges(a, b, weights, via, np.full(len(a), kind, dtype=np.int8))
                np.add.at(self.strength.values, a, weights)
                np.add.at(self.strength.values, b, weights)
                self.kind_counts[kind] += len(a)
        for code, count in Counter(self.code_of(s) for _, s in passages).items():
            self.support.change(code, np.zeros(0, dtype=np.int64), +1, count)
        live = mentions[self.live[mentions[:, 0]]] if len(mentions) else mentions
        self._support(live, +1)
        self._rehide_added(existing, syn, live, np.concatenate([relations, mentions[:, [0, 1, 0]]]))
        self.version += 1

    def _rehide_added(self, existing: int, synonyms: np.ndarray, live_mentions: np.ndarray,
                      read: np.ndarray) -> None:
        """``hidden`` after an add: the ends of new synonyms of an entity no live passage mentions, of
        new edges read from a passage that is not live, and the synonyms of older entities whose
        first live mention this add brought. (Usually none: nothing to read.)"""
        changed = [read[~self.live[read[:, 2]], :2].ravel()] if len(read) else []
        if len(synonyms):
            unseen = (self.support.counts(None, synonyms.ravel()) == 0).reshape(-1, 2).any(axis=1)
            changed.append(synonyms[unseen].ravel())
        if len(live_mentions):
            entities, added = np.unique(live_mentions[:, 1], return_counts=True)
            old = entities < existing
            first_seen = entities[old][self.support.counts(None, entities[old]) == added[old]]
            changed.append(with_synonyms(self, first_seen))
        self._rehide(np.concatenate(changed) if changed else np.zeros(0, dtype=np.int64))

    def _rehide(self, vertices: np.ndarray) -> None:
        vertices = np.unique(np.asarray(vertices, dtype=np.int64))
        if len(vertices):
            self.hidden[vertices] = unwalkable(self, vertices)

    def _add_facts(self, facts: list[tuple[int, str, int, int]]) -> None:
        if not facts:
            return
        start = len(self.fact_ids)
        self.fact_ids.append([fid for _, fid, _, _ in facts])
        passages = np.array([p for p, _, _, _ in facts], dtype=np.int64)
        self.fact_passage.append(passages)
        self.fact_subject.append([s for _, _, s, _ in facts])
        self.fact_object.append([o for _, _, _, o in facts])
        heads = np.flatnonzero(np.r_[True, passages[1:] != passages[:-1]])
        counts = np.diff(np.r_[heads, len(passages)])
        for head, count in zip(heads.tolist(), counts.tolist(), strict=True):
            p = int(passages[head])
            if self.fact_first[p] < 0:  # a passage's facts come with it, in one write
                self.fact_first[p] = start + head
                self.fact_count[p] = count

    def _support(self, mentions: np.ndarray, delta: int) -> None:
        """Count mentions (passage, entity rows) of live passages into their spaces' support."""
        if not len(mentions):
            return
        codes = self.space_code[mentions[:, 0]]
        for code in np.unique(codes).tolist():
            mine = mentions[codes == code]
            self.moves.append((code, *self.support.change(code, mine[:, 1], delta, 0)))

    def facts_of(self, v: int) -> np.ndarray:
        """Fact rows read from passage vertex ``v``."""
        first = int(self.fact_first[v])
        return np.arange(first, first + int(self.fact_count[v])) if first >= 0 else np.zeros(0, dtype=np.int64)

    def mentions_of(self, vertices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(owner index, entity vertex) of every mention entry at these passage vertices."""
        self.seal()
        owners, columns = self.edges.entries(np.asarray(vertices, dtype=np.int64))
        keep = columns["kinds"] == MENTION
        return owners[keep], columns["targets"][keep].astype(np.int64)

    def seal(self) -> None:
        if self.edges.has_pending:
            self.edges.seal(self.vertex_count)

    # -- lifecycle -----------------------------------------------------------------

    def retire(self, passage_ids: list[str]) -> None:
        """Take passages out of every view; their vertices and edges stay, unwalked."""
        self._set_live(passage_ids, False)

    def revive(self, passage_ids: list[str]) -> bool:
        """Bring retired passages back; False (and no change) when one was never here."""
        if any(pid not in self.vertex for pid in passage_ids):
            return False
        self._set_live(passage_ids, True)
        return True

    def _set_live(self, passage_ids: list[str], live: bool) -> None:
        vertices = [self.vertex[p] for p in dict.fromkeys(passage_ids) if p in self.vertex]
        changing = np.array([v for v in vertices if self.is_passage[v] and bool(self.live[v]) != live],
                            dtype=np.int64)
        if not len(changing):
            return
        owners, entities = self.mentions_of(changing)
        self.live[changing] = live
        self.retired += -len(changing) if live else len(changing)
        delta = 1 if live else -1
        for code in np.unique(self.space_code[changing]).tolist():
            mine = self.space_code[changing] == code
            self.moves.append((code, *self.support.change(code, entities[mine[owners]], delta,
                                                          delta * int(mine.sum()))))
        distinct, moved = np.unique(entities, return_counts=True)
        now = self.support.counts(None, distinct)
        flipped = distinct[now == moved] if live else distinct[now == 0]  # first or last live mention
        self._rehide(np.concatenate([touched_by(self, changing, entities), with_synonyms(self, flipped)]))
        self.version += 1

    def impact(self, passage_ids: list[str], spaces: Spaces = None) -> Impact:
        """What retiring these live passages would take out of the graph a reader of ``spaces`` sees:
        an entity counts as lost when no other passage of that view mentions it (so the answer
        says nothing about passages the reader cannot see)."""
        view = self.view(spaces)
        candidates = np.array(list(dict.fromkeys(self.vertex[p] for p in passage_ids if p in self.vertex)),
                              dtype=np.int64)
        rows = candidates[view.visible_passage[candidates]] if len(candidates) else candidates
        facts = [fid for v in rows.tolist() for fid in self.fact_ids.take(self.facts_of(v))]
        if not len(rows):
            return Impact(facts=facts, entities=[], edges={"mention": 0, "relation": 0, "synonym": 0})
        _, entities = self.mentions_of(rows)
        mentioned, lost_support = np.unique(entities, return_counts=True)
        lost = mentioned[self.support.counts(view.codes, mentioned) - lost_support <= 0]
        synonym = 0
        if len(lost):
            self.seal()
            owners, columns = self.edges.entries(lost)
            syn = columns["kinds"] == SYNONYM
            targets = columns["targets"][syn].astype(np.int64)
            visible = self.support.counts(view.codes, targets) > 0
            both_lost = np.isin(targets, lost)
            synonym = int((visible & ~both_lost).sum() + (both_lost.sum() // 2))
        return Impact(facts=facts, entities=[self.record_ids[v] for v in lost.tolist()],
                      edges={"mention": len(entities), "relation": len(facts), "synonym": synonym})

    # -- reading -----------------------------------------------------------------

    @property
    def passage_total(self) -> int:
        """Live passages."""
        return self.support.passage_total(None)

    def live_spaces(self) -> frozenset[str]:
        return frozenset(self.space_names[c] for c in self.support.spaces_with_passages().tolist())

    def view(self, spaces: Spaces = None) -> GraphView:
        """The graph a reader of ``spaces`` may walk, cached per distinct set of spaces.

        A view is cheap (the space codes it may read); what it caches (an exact
        transition matrix, an igraph copy) is built on first use. The cache keeps
        the ``MAX_VIEWS`` most recently used read-sets.
        """
        from hippo.graph.view import GraphView

        with self._views_lock:
            view = self._views.pop(spaces, None)
        if view is None or view.version != self.version:
            view = GraphView.of(self, spaces)
        with self._views_lock:
            self._views[spaces] = view  # dicts keep insertion order: last is most recent
            while len(self._views) > MAX_VIEWS:
                del self._views[next(iter(self._views))]
        return view

    def edge_counts(self) -> dict[str, int]:
        return {name: int(self.kind_counts[k]) for k, name in enumerate(KIND_NAMES)}

    def stats(self) -> dict[str, int]:
        """Vertices (retired passages included), live passages, entities, edges by kind (all ever added)."""
        return {"vertices": self.vertex_count, "passages": self.passage_total,
                "entities": int((~self.is_passage.values).sum()),
                **{f"{kind}_edges": count for kind, count in self.edge_counts().items()}}

    # -- saving ------------------------------------------------------------------

    def arrays(self) -> dict[str, np.ndarray]:
        """Everything needed to rebuild this projection, as arrays (one run: ``compact`` first)."""
        run = self.edges.compact(self.vertex_count)
        blob, offsets = self.record_ids.arrays()
        fact_blob, fact_offsets = self.fact_ids.arrays()
        return {
            "vertex_blob": blob, "vertex_offsets": offsets, "is_passage": self.is_passage.values,
            "live": self.live.values, "space_code": self.space_code.values,
            "run_indptr": run.indptr, **{f"run_{name}": values for name, values in run.columns.items()},
            "strength": self.strength.values,
            "fact_blob": fact_blob, "fact_offsets": fact_offsets, "fact_subject": self.fact_subject.values,
            "fact_object": self.fact_object.values, "fact_passage": self.fact_passage.values,
            "fact_first": self.fact_first.values, "fact_count": self.fact_count.values,
            "kind_counts": self.kind_counts,
            "weights": np.array([self.relation_weight, self.mention_weight]),
        }

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray], space_names: list[str]) -> GraphProjection:
        relation_weight, mention_weight = (float(x) for x in arrays["weights"])
        p = cls(relation_weight=relation_weight, mention_weight=mention_weight)
        p.record_ids = StringTable(arrays["vertex_blob"], arrays["vertex_offsets"])
        p.vertex = StringIndex(p.record_ids)
        p.is_passage, p.live = Column(bool, arrays["is_passage"]), Column(bool, arrays["live"])
        p.space_code = Column(np.int32, arrays["space_code"])
        p.space_names = list(space_names)
        p._space_index = {s: i for i, s in enumerate(space_names)}
        p.edges = EdgeRuns([Run(indptr=arrays["run_indptr"], columns={name: arrays[f"run_{name}"] for name in
                                                                     ("targets", "weights", "via", "kinds")})])
        p.strength = Column(np.float64, arrays["strength"])
        p.fact_ids = StringTable(arrays["fact_blob"], arrays["fact_offsets"])
        for name in ("fact_subject", "fact_object", "fact_passage", "fact_first", "fact_count"):
            setattr(p, name, Column(arrays[name].dtype, arrays[name]))
        p.kind_counts = np.array(arrays["kind_counts"], dtype=np.int64)
        p.retired = int((p.is_passage.values & ~p.live.values).sum())
        p._recount()
        p.hidden = Column(np.float64, np.zeros(p.vertex_count))
        entities = np.flatnonzero(~p.is_passage.values)
        unseen = entities[p.support.counts(None, entities) == 0]
        p._rehide(np.concatenate([touched_by(p, np.flatnonzero(p.is_passage.values & ~p.live.values)),
                                  with_synonyms(p, unseen)]))
        return p

    def _recount(self) -> None:
        """Per-space support from the mention entries of live passages (vectorized, O(mentions))."""
        for code in range(len(self.space_names)):
            self.support.reserve(code)  # every known space gets its slot
        live_passages = self.is_passage.values & self.live.values
        codes, counts = np.unique(self.space_code.values[live_passages], return_counts=True)
        for code, count in zip(codes.tolist(), counts.tolist(), strict=True):
            self.support.passages[code] = count
        for run in self.edges.runs:
            sources = np.repeat(np.arange(len(run.indptr) - 1), np.diff(run.indptr))
            keep = (run.kinds == MENTION) & live_passages[sources]
            self._support(np.stack([sources[keep], run.targets[keep].astype(np.int64)], axis=1), +1)
        self.moves.clear()  # a loaded state's shards already hold what these counts say
