"""The in-process igraph projection of the store's graph.

Vertices are entities and passages; edges are relations (one per supporting
fact), mentions (passage-entity) and synonyms. Vertex ids never change once
given: views for a set of readable spaces keep every vertex and only drop
edges, so a PPR vector is always indexed the same way.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal

import igraph as ig
import numpy as np
from scipy import sparse

from hippo.graph.ppr import Transition
from hippo.store.base import GraphData, Spaces

EdgeKind = Literal["relation", "mention", "synonym"]
_NO_PASSAGE = -1
MAX_VIEWS = 64  # cached read-sets (each holds a filtered graph and a transition matrix)


@dataclass(frozen=True)
class GraphView:
    """What one reader may walk: the graph restricted to their spaces."""

    graph: ig.Graph
    passage_vertices: np.ndarray  # vertex ids of visible passages, in store order
    visible_passage: np.ndarray  # per vertex: a passage this reader may see
    passage_count: np.ndarray  # per vertex: visible passages mentioning it (entities)
    incidence: sparse.csr_matrix  # vertex x vertex, passage row -> entity column

    @cached_property
    def strength(self) -> np.ndarray:
        """Per vertex: the summed weight of its edges in this view (the walk's normalizer)."""
        return np.asarray(self.graph.strength(weights="weight"), dtype=np.float64)

    @cached_property
    def transition(self) -> Transition:
        """The walk's step matrix, built on first recall and kept with the view."""
        return Transition.of(self.graph)


@dataclass(frozen=True)
class Impact:
    """The derived records that follow passages out of the live graph."""

    facts: list[str]  # fact ids read from the passages
    entities: list[str]  # entity ids no other live passage mentions
    edges: dict[str, int]  # edges leaving the walk, by kind


@dataclass
class GraphProjection:
    graph: ig.Graph = field(default_factory=lambda: ig.Graph(directed=False))
    vertex: dict[str, int] = field(default_factory=dict)
    record_ids: list[str] = field(default_factory=list)
    is_passage: list[bool] = field(default_factory=list)
    space: list[str | None] = field(default_factory=list)
    live: list[bool] = field(default_factory=list)  # False: a retired (tombstoned) passage
    facts_of: dict[int, list[str]] = field(default_factory=dict)  # passage vertex -> its fact ids
    relation_weight: float = 1.0
    mention_weight: float = 1.0
    _views: dict[Spaces, GraphView] = field(default_factory=dict)
    _views_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def from_data(cls, data: GraphData, *, relation_weight: float = 1.0, mention_weight: float = 1.0):
        projection = cls(relation_weight=relation_weight, mention_weight=mention_weight)
        projection.add(data)
        return projection

    # -- building ----------------------------------------------------------------

    def add(self, data: GraphData) -> None:
        """Add new vertices and edges (those already present are skipped by the caller's ids)."""
        new_vertices: list[tuple[str, bool, str | None]] = []
        for pid, space in data.passages:
            if pid not in self.vertex:
                new_vertices.append((pid, True, space))
                self.vertex[pid] = len(self.record_ids) + len(new_vertices) - 1
        for eid in data.entities:
            if eid not in self.vertex:
                new_vertices.append((eid, False, None))
                self.vertex[eid] = len(self.record_ids) + len(new_vertices) - 1
        for rid, passage, space in new_vertices:
            self.record_ids.append(rid)
            self.is_passage.append(passage)
            self.space.append(space)
            self.live.append(True)
        if new_vertices:
            self.graph.add_vertices(len(new_vertices))

        edges: list[tuple[int, int]] = []
        kinds: list[str] = []
        weights: list[float] = []
        via: list[int] = []
        v = self.vertex
        for fid, subject, obj, passage in data.facts:
            if subject in v and obj in v and passage in v and subject != obj:
                edges.append((v[subject], v[obj]))
                kinds.append("relation")
                weights.append(self.relation_weight)
                via.append(v[passage])
                self.facts_of.setdefault(v[passage], []).append(fid)
        for passage, entity in data.mentions:
            if passage in v and entity in v:
                edges.append((v[passage], v[entity]))
                kinds.append("mention")
                weights.append(self.mention_weight)
                via.append(v[passage])
        for a, b, score in data.synonyms:
            if a in v and b in v:
                edges.append((v[a], v[b]))
                kinds.append("synonym")
                weights.append(float(score))
                via.append(_NO_PASSAGE)
        if edges:
            self.graph.add_edges(edges, attributes={"kind": kinds, "weight": weights, "via": via})
        if new_vertices or edges:
            self._views.clear()

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
        for pid in passage_ids:
            v = self.vertex.get(pid)
            if v is not None and self.is_passage[v]:
                self.live[v] = live
        self._views.clear()

    def impact(self, passage_ids: list[str], spaces: Spaces = None) -> Impact:
        """What retiring these live passages would take out of the graph a reader of ``spaces`` sees:
        an entity counts as lost when no other passage of that view mentions it (so the answer
        says nothing about passages the reader cannot see)."""
        view = self.view(spaces)
        vertices = [self.vertex[pid] for pid in passage_ids if pid in self.vertex]
        rows = [v for v in vertices if view.visible_passage[v]]
        facts = [fid for v in rows for fid in self.facts_of.get(v, [])]
        if not rows:
            return Impact(facts=facts, entities=[], edges={"mention": 0, "relation": 0, "synonym": 0})
        mentioned = view.incidence[rows]
        lost_support = np.asarray((mentioned > 0).sum(axis=0)).ravel()
        entities = np.flatnonzero((lost_support > 0) & (view.passage_count - lost_support <= 0))
        lost = np.zeros(self.graph.vcount(), dtype=bool)
        lost[entities] = True
        synonym = 0
        if len(entities) and view.graph.ecount():
            kinds = np.array(view.graph.es["kind"])
            ends = np.array(view.graph.get_edgelist(), dtype=np.int64)
            synonym = int(((kinds == "synonym") & (lost[ends[:, 0]] | lost[ends[:, 1]])).sum())
        return Impact(facts=facts, entities=[self.record_ids[v] for v in entities],
                      edges={"mention": int(mentioned.nnz), "relation": len(facts), "synonym": synonym})

    # -- reading -----------------------------------------------------------------

    @property
    def passage_total(self) -> int:
        """Live passages."""
        return sum(p and live for p, live in zip(self.is_passage, self.live, strict=True))

    def view(self, spaces: Spaces = None) -> GraphView:
        """The graph a reader of ``spaces`` may walk, cached per distinct set of spaces.

        The cache keeps the ``MAX_VIEWS`` most recently used read-sets: one
        per session or user could otherwise grow without bound.
        """
        with self._views_lock:
            view = self._views.pop(spaces, None)
        if view is None:  # two readers may build the same view; the result is the same
            view = self._build_view(spaces)
        with self._views_lock:
            self._views[spaces] = view  # dicts keep insertion order: last is most recent
            while len(self._views) > MAX_VIEWS:
                del self._views[next(iter(self._views))]
        return view

    def _build_view(self, spaces: Spaces) -> GraphView:
        n = self.graph.vcount()
        visible_passage = np.array(
            [p and live and (spaces is None or s in spaces)
             for p, live, s in zip(self.is_passage, self.live, self.space, strict=True)],
            dtype=bool,
        ) if n else np.zeros(0, dtype=bool)
        if self.graph.ecount():
            kind = np.array(self.graph.es["kind"])
            via = np.array(self.graph.es["via"], dtype=np.int64)
            ends = np.array(self.graph.get_edgelist(), dtype=np.int64)
        else:
            kind = np.zeros(0, dtype=str)
            via = np.zeros(0, dtype=np.int64)
            ends = np.zeros((0, 2), dtype=np.int64)
        supported = np.zeros(len(kind), dtype=bool)
        has_passage = via >= 0
        supported[has_passage] = visible_passage[via[has_passage]]

        mention = (kind == "mention") & supported
        # Mention edges run passage -> entity in insertion order; find which end is the entity.
        m_ends = ends[mention]
        m_passage = np.where(visible_passage[m_ends[:, 0]], m_ends[:, 0], m_ends[:, 1])
        m_entity = np.where(visible_passage[m_ends[:, 0]], m_ends[:, 1], m_ends[:, 0])
        incidence = sparse.csr_matrix(
            (np.ones(len(m_passage)), (m_passage, m_entity)), shape=(n, n)
        )
        incidence.data[:] = 1.0  # duplicates would sum; a mention counts once
        passage_count = np.asarray((incidence > 0).sum(axis=0)).ravel().astype(np.float64)
        visible_entity = passage_count > 0

        synonym = kind == "synonym"
        if synonym.any():
            s_ends = ends[synonym]
            supported[np.flatnonzero(synonym)] = visible_entity[s_ends[:, 0]] & visible_entity[s_ends[:, 1]]
        graph = self.graph if supported.all() else self.graph.subgraph_edges(
            np.flatnonzero(supported).tolist(), delete_vertices=False
        )
        return GraphView(
            graph=graph,
            passage_vertices=np.flatnonzero(visible_passage),
            visible_passage=visible_passage,
            passage_count=passage_count,
            incidence=incidence.tocsr(),
        )

    def edge_counts(self) -> dict[str, int]:
        if not self.graph.ecount():
            return {"relation": 0, "mention": 0, "synonym": 0}
        kinds = self.graph.es["kind"]
        return {k: kinds.count(k) for k in ("relation", "mention", "synonym")}
