"""What one reader may walk: the projection seen through their readable spaces.

A view holds only the codes of the spaces it may read; visibility is decided
per vertex or per edge entry when something is read, from per-space counts
the writes keep current. Nothing here scans every vertex on the query path:
``passage_vertices`` and the exact solver's matrix are whole-graph and are
built only for small graphs, tests and inspection (``unread`` finds the other
spaces' passages in one pass, once per view and store version).

Visibility: a passage when it is live and in a readable space; an entity when
a visible passage mentions it; a relation or mention edge when the passage it
was read from is visible; a synonym edge when both its entities are.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Literal

import igraph as ig
import numpy as np
from scipy import sparse

from hippo.graph.edges import KIND_NAMES, MENTION, SYNONYM
from hippo.graph.hidden import unread
from hippo.graph.ppr import Neighbours, SparseScores, Transition, checked_reset, power_pagerank, this_workspace
from hippo.graph.push import Visibility, compiled_push
from hippo.graph.scoring import Readout, passage_mass
from hippo.store.base import Spaces

if TYPE_CHECKING:  # the projection builds its views: it imports this module, not the reverse
    from hippo.graph.projection import GraphProjection

Solver = Literal["auto", "exact", "push"]
UNREAD_MAX = 20_000  # live passages a reader may not read up to which its view works out what they hide ...
UNREAD_RATIO = 4  # ... and at most this many times those it sees
FIRST_CHUNK = 64  # mention entries scanned at a time when looking for an entity's first visible passage


@dataclass(frozen=True)
class _ByVertex:
    """``view.visible_passage[v]`` / ``view.passage_count[v]``: a vertex-indexed lookup, for ints or arrays."""

    lookup: object

    def __getitem__(self, vertices):  # noqa: ANN001
        if np.isscalar(vertices) or np.ndim(vertices) == 0:
            return self.lookup(np.array([int(vertices)], dtype=np.int64))[0]
        return self.lookup(np.asarray(vertices, dtype=np.int64))


@dataclass(frozen=True)
class GraphView:
    projection: GraphProjection
    spaces: Spaces
    codes: np.ndarray | None  # readable space codes; None: every space
    version: int
    covers: bool  # every space holding a live passage is readable: what it walks is ``strength - hidden``
    everything: bool  # no edge to hide: covers, and nothing retired
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def of(cls, projection: GraphProjection, spaces: Spaces) -> GraphView:
        codes = None
        if spaces is not None:
            known = (projection.known_code(s) for s in spaces)
            codes = np.array(sorted(c for c in known if c is not None), dtype=np.int64)
        present = projection.support.spaces_with_passages()
        covers = codes is None or bool(np.isin(present, codes).all())
        return cls(projection=projection, spaces=spaces, codes=codes, version=projection.version,
                   covers=covers, everything=covers and projection.retired == 0)

    # -- what is visible -------------------------------------------------------------

    def _passages_visible(self, vertices: np.ndarray) -> np.ndarray:
        p = self.projection
        n = p.vertex_count
        inside = (vertices >= 0) & (vertices < n)
        out = np.zeros(len(vertices), dtype=bool)
        v = vertices[inside]
        ok = p.is_passage[v] & p.live[v]
        if self.codes is not None:
            ok &= np.isin(p.space_code[v], self.codes)
        out[inside] = ok
        return out

    def _entity_counts(self, vertices: np.ndarray) -> np.ndarray:
        counts = self.projection.support.counts(self.codes, vertices).astype(np.float64)
        n = self.projection.vertex_count
        inside = (vertices >= 0) & (vertices < n)
        counts[~inside] = 0.0
        counts[inside] *= ~self.projection.is_passage[vertices[inside]]
        return counts

    @property
    def visible_passage(self) -> _ByVertex:
        """``view.visible_passage[v]``: a passage this reader may see."""
        return _ByVertex(self._passages_visible)

    @property
    def passage_count(self) -> _ByVertex:
        """``view.passage_count[v]``: visible passages mentioning entity ``v`` (0 for passages)."""
        return _ByVertex(self._entity_counts)

    def visible(self, vertices: np.ndarray) -> np.ndarray:
        """Visible passages or entities."""
        vertices = np.asarray(vertices, dtype=np.int64)
        return self._passages_visible(vertices) | (self._entity_counts(vertices) > 0)

    @property
    def passage_total(self) -> int:
        return self.projection.support.passage_total(self.codes)

    @cached_property
    def passage_vertices(self) -> np.ndarray:
        """Every visible passage vertex, in store order. O(vertices): not for the query path."""
        return np.flatnonzero(self._passages_visible(np.arange(self.projection.vertex_count)))

    # -- the adjacency (``hippo.graph.ppr.Adjacency``) ------------------------------------

    @property
    def vertex_count(self) -> int:
        return self.projection.vertex_count

    def strength(self, vertices: np.ndarray) -> np.ndarray:
        return self.projection.strength[vertices]

    def entries(self, vertices: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """The visible edge entries at these vertices: (owner index, columns)."""
        self.projection.seal()
        vertices = np.asarray(vertices, dtype=np.int64)
        owners, columns = self.projection.edges.entries(vertices)
        if self.everything or not len(owners):
            return owners, columns
        via, kinds = columns["via"], columns["kinds"]
        keep = np.zeros(len(owners), dtype=bool)
        read = kinds != SYNONYM
        keep[read] = self._passages_visible(via[read].astype(np.int64))
        syn = ~read
        if syn.any():
            ends = np.concatenate([vertices[owners[syn]], columns["targets"][syn].astype(np.int64)])
            seen = self._entity_counts(ends) > 0
            keep[syn] = seen[: syn.sum()] & seen[syn.sum():]
        return owners[keep], {name: values[keep] for name, values in columns.items()}

    def walk_strength(self, vertices: np.ndarray) -> np.ndarray:
        """The summed weight of each vertex's visible edges: exactly what a walk divides by.
        ``strength`` less what no one may walk and what this reader may not (``unread``), where
        the view works that out; else read from the edges, which costs their number."""
        vertices = np.asarray(vertices, dtype=np.int64)
        if self.everything:
            return self.projection.strength[vertices]
        unread = self.unread
        if unread is not None:
            strength = self.projection.strength[vertices]
            hidden = self.projection.hidden[vertices]
            at, weight = unread
            if len(at):
                found = np.minimum(np.searchsorted(at, vertices), len(at) - 1)
                hidden = hidden + np.where(at[found] == vertices, weight[found], 0.0)
            return np.where(hidden < strength * (1.0 - 1e-12), strength - hidden, 0.0)  # all hidden: 0, not a residue
        owners, columns = self.entries(vertices)
        return np.bincount(owners, weights=columns["weights"].astype(np.float64), minlength=len(vertices))

    def neighbours(self, vertices: np.ndarray) -> Neighbours:
        owners, columns = self.entries(vertices)
        return Neighbours(owners=owners, targets=columns["targets"].astype(np.int64),
                          weights=columns["weights"].astype(np.float64))

    def mentions(self, passage: int) -> np.ndarray:
        """Entity vertices a visible passage mentions (none for a hidden one)."""
        if not self._passages_visible(np.array([passage]))[0]:
            return np.zeros(0, dtype=np.int64)
        _, entities = self.projection.mentions_of(np.array([passage]))
        return entities

    def first_passages(self, entities: list[int]) -> dict[int, int]:
        """Each entity's first visible passage in store order (entries run oldest first)."""
        self.projection.seal()
        found: dict[int, int] = {}
        for e in entities:
            for run in self.projection.edges.runs:
                if e >= len(run.indptr) - 1:
                    continue
                start, end = int(run.indptr[e]), int(run.indptr[e + 1])
                for at in range(start, end, FIRST_CHUNK):
                    part = slice(at, min(end, at + FIRST_CHUNK))
                    targets = run.targets[part][run.kinds[part] == MENTION].astype(np.int64)
                    seen = targets[self._passages_visible(targets)]
                    if len(seen):
                        found[e] = int(seen[0])
                        break
                if e in found:
                    break
        return found

    # -- PPR -------------------------------------------------------------------------

    @property
    def edge_entries(self) -> int:
        return self.projection.edges.size

    def pagerank(self, vertices: np.ndarray, weights: np.ndarray, damping: float, *, solver: Solver = "auto",
                 epsilon: float = 1e-6, exact_max_edges: int = 2_000) -> SparseScores:
        """PPR from a sparse reset: exact power iteration on small graphs (or when asked),
        local push otherwise. Both return the vertices they reached and their scores."""
        exact = solver == "exact" or (solver == "auto" and self.edge_entries <= 2 * exact_max_edges)
        if exact:
            reset = np.zeros(self.vertex_count)
            np.add.at(reset, np.asarray(vertices, dtype=np.int64), np.maximum(np.asarray(weights, float), 0.0))
            return SparseScores.of_dense(power_pagerank(self.transition, reset, damping))
        return compiled_push(self, *checked_reset(vertices, weights, self.vertex_count), damping, epsilon,
                             this_workspace())

    @property
    def unread(self) -> tuple[np.ndarray, np.ndarray] | None:
        """What this reader may not walk beyond what no one may (``hippo.graph.hidden.unread``):
        worked out once per view (it costs what the other spaces hold: on 2Wiki ~25 us a passage)
        while they hold at most ``UNREAD_RATIO`` times the live passages the reader sees and at most
        ``UNREAD_MAX`` (a reader of an organisation's space beside users' memories, or of one half
        of a store); else None, and the walk reads strengths as it goes (a reader of a small space
        walks a small graph)."""
        if "unread" not in self._cache:
            self._cache["unread"] = ((np.zeros(0, dtype=np.int64), np.zeros(0)) if self.covers
                                     else unread(self.projection, self.codes,
                                                   min(UNREAD_MAX, UNREAD_RATIO * self.passage_total)))
        return self._cache["unread"]

    @property
    def visibility(self) -> Visibility:
        """What this reader may walk, as the compiled push reads it (made once per view)."""
        found = self._cache.get("visibility")
        if found is None:
            found = self._cache["visibility"] = Visibility.of(self)
        return found

    @property
    def transition(self) -> Transition:
        """The exact solver's step matrix over the visible graph (built once per view)."""
        if "transition" not in self._cache:
            self._cache["transition"] = Transition.of_adjacency(self.adjacency_matrix())
        return self._cache["transition"]

    def adjacency_matrix(self) -> sparse.csr_matrix:
        n = self.vertex_count
        owners, columns = self.entries(np.arange(n))
        return sparse.csr_matrix((columns["weights"].astype(np.float64), (owners, columns["targets"])),
                                 shape=(n, n))

    @property
    def graph(self) -> ig.Graph:
        """The visible graph as igraph (edge attributes kind, weight, via). O(E): reference and tests."""
        if "graph" not in self._cache:
            n = self.vertex_count
            owners, columns = self.entries(np.arange(n))
            targets = columns["targets"].astype(np.int64)
            # Each edge is an entry at both ends; keep the one at its lower end (the first at equal ends).
            once = owners < targets
            graph = ig.Graph(n=n, edges=np.stack([owners[once], targets[once]], axis=1).tolist(), directed=False)
            graph.es["weight"] = columns["weights"][once].astype(float).tolist()
            graph.es["kind"] = [KIND_NAMES[k] for k in columns["kinds"][once].tolist()]
            graph.es["via"] = columns["via"][once].astype(int).tolist()
            self._cache["graph"] = graph
        return self._cache["graph"]

    # -- read-out ------------------------------------------------------------------------

    def local_readout(self, scores: SparseScores, incidence: bool) -> tuple[np.ndarray, np.ndarray,
                                                                           sparse.csr_matrix]:
        """The inputs of ``scoring.passage_mass`` restricted to the vertices PPR reached:
        (their scores, positions of the visible passages among them, the mention incidence
        among them, passage row -> entity column). Nothing outside them has mass."""
        reached = scores.vertices
        passages = np.flatnonzero(self._passages_visible(reached))
        m = len(reached)
        if not incidence or not len(passages):
            return scores.scores, passages, sparse.csr_matrix((m, m))
        owners, entities = self.projection.mentions_of(reached[passages])
        at = np.searchsorted(reached, entities)
        at = np.minimum(at, m - 1)
        inside = reached[at] == entities
        rows, cols = passages[owners[inside]], at[inside]
        return scores.scores, passages, sparse.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(m, m))

    def passage_scores(self, scores: SparseScores, readout: Readout, blend: float) -> tuple[np.ndarray, np.ndarray]:
        """``scoring.passage_mass`` of a PPR result: (the visible passage vertices it reached, their
        scores). An entity hands its passages its mass divided by its visible strength."""
        if readout == "passage":  # their own mass: no incidence to build (an empty one took ~0.1 ms)
            passages = np.flatnonzero(self._passages_visible(scores.vertices))
            return scores.vertices[passages], scores.scores[passages]
        mass, passages, incidence = self.local_readout(scores, True)
        strength = np.zeros(len(scores.vertices))
        read = np.unique(incidence.indices)  # only the entities a reached passage mentions
        strength[read] = self.walk_strength(scores.vertices[read])
        return scores.vertices[passages], passage_mass(mass, passages, incidence, readout, blend, strength=strength)
