"""Personalized PageRank as pure functions of a graph and a reset vector.

Two solvers of the same walk (damping ``d``: follow an edge with probability
``d``, restart at the reset distribution otherwise; a vertex without edges
restarts):

- exact: ``power_pagerank`` on a transition matrix (and igraph's PRPACK,
  ``personalized_pagerank``, as the reference); its cost is the whole graph
  times ~35 iterations;
- local: ``push_pagerank``, forward push (Andersen, Chung & Lang 2006) from a
  sparse reset. It touches only vertices whose residual mass reaches
  ``epsilon`` times their strength, so its work is bounded by
  ``1 / (epsilon * (1 - d))`` edge visits whatever the size of the graph.
  It reads the graph through ``Adjacency``: the neighbours of a set of
  vertices, one frontier wave at a time, which an in-process CSR or a
  database (one query per wave) can both serve.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from functools import cache
from typing import Protocol

import igraph as ig
import numpy as np
from scipy import sparse
from threadpoolctl import ThreadpoolController

from hippo.runs import segment_indices


@cache
def _single_threaded_igraph() -> bool:
    """Limit igraph's own OpenMP runtime to one thread, once per process.

    igraph wheels vendor a libgomp apart from torch's. On two busy cores its
    spinning OpenMP team stalls every PPR call (measured: ~150 ms floor at
    1k passages vs 1.4 ms with one thread; 15 vs 170 ms at 10k). Torch keeps
    its threads for embedding.
    """
    controller = ThreadpoolController()
    paths = [lib.filepath for lib in controller.lib_controllers
             if lib.user_api == "openmp" and "igraph" in (lib.filepath or "")]
    if paths:
        controller.select(filepath=paths).limit(limits=1)  # kept for the process's life
    return bool(paths)


def personalized_pagerank(graph: ig.Graph, reset: np.ndarray, damping: float = 0.5) -> np.ndarray:
    """Stationary distribution of a walk that restarts at ``reset`` with probability 1 - damping.

    ``reset`` needs no normalization (igraph scales it); it must be non-negative
    with a positive sum. Edges are undirected and weighted by their ``weight``
    attribute; parallel edges add up.
    """
    reset = np.nan_to_num(np.asarray(reset, dtype=np.float64), nan=0.0, posinf=0.0, neginf=0.0)
    reset[reset < 0] = 0.0
    if reset.shape != (graph.vcount(),):
        raise ValueError(f"reset has shape {reset.shape}, graph has {graph.vcount()} vertices")
    if reset.sum() <= 0:
        raise ValueError("reset vector has no positive entry")
    if graph.ecount() == 0:  # nothing to walk: the walk stays where it restarts
        return reset / reset.sum()
    _single_threaded_igraph()
    scores = graph.personalized_pagerank(
        directed=False,
        damping=damping,
        reset=reset.tolist(),
        weights="weight",
        implementation="prpack",
    )
    return np.asarray(scores, dtype=np.float64)


@dataclass(frozen=True)
class Transition:
    """A walk's one-step matrix over an undirected weighted graph, built once per graph.

    ``matrix[i, j]`` is the probability of stepping from j to i: edge weight
    over j's strength, parallel edges added up, as igraph's PPR walks.
    """

    matrix: sparse.csr_matrix
    dangling: np.ndarray  # vertices with no edge: their mass restarts

    @classmethod
    def of(cls, graph: ig.Graph) -> Transition:
        n = graph.vcount()
        ends = np.asarray(graph.get_edgelist(), dtype=np.int64).reshape(-1, 2)
        weights = np.asarray(graph.es["weight"] if graph.ecount() else [], dtype=np.float64)
        adjacency = sparse.csr_matrix(
            (np.concatenate([weights, weights]),
             (np.concatenate([ends[:, 0], ends[:, 1]]), np.concatenate([ends[:, 1], ends[:, 0]]))),
            shape=(n, n),
        )
        return cls.of_adjacency(adjacency)

    @classmethod
    def of_adjacency(cls, adjacency: sparse.csr_matrix) -> Transition:
        """From a symmetric weighted adjacency matrix (both directions of every edge)."""
        n = adjacency.shape[0]
        strength = np.asarray(adjacency.sum(axis=1)).ravel()
        inverse = np.divide(1.0, strength, out=np.zeros(n), where=strength > 0)
        return cls(matrix=(adjacency @ sparse.diags(inverse)).tocsr(), dangling=strength == 0)


def power_pagerank(transition: Transition, reset: np.ndarray, damping: float = 0.5,
                   tolerance: float = 1e-10, max_iterations: int = 200) -> np.ndarray:
    """The same PPR as ``personalized_pagerank`` by power iteration on a cached matrix.

    With damping 0.5 the error halves every step, so ~35 sparse products
    reach the tolerance; no per-call graph preprocessing as with PRPACK
    (measured at 100k passages: 81 vs 312 ms, identical top 10).
    """
    reset = np.nan_to_num(np.asarray(reset, dtype=np.float64), nan=0.0, posinf=0.0, neginf=0.0)
    reset[reset < 0] = 0.0
    if reset.shape != (transition.matrix.shape[0],):
        raise ValueError(f"reset has shape {reset.shape}, graph has {transition.matrix.shape[0]} vertices")
    if reset.sum() <= 0:
        raise ValueError("reset vector has no positive entry")
    restart = reset / reset.sum()
    scores = restart.copy()
    for _ in range(max_iterations):
        step = damping * (transition.matrix @ scores)
        step += (damping * scores[transition.dangling].sum() + 1.0 - damping) * restart
        if np.abs(step - scores).sum() < tolerance:
            return step
        scores = step
    return scores


# -- local push ----------------------------------------------------------------------


@dataclass(frozen=True)
class Neighbours:
    """The edges leaving some vertices, concatenated in the order the vertices were asked."""

    owners: np.ndarray  # per entry: index of its vertex in the vertices asked
    targets: np.ndarray  # neighbour vertex of each entry (parallel edges repeat)
    weights: np.ndarray  # weight of each entry


class Adjacency(Protocol):
    """What a local walk reads of a graph. Vertices are ``0 .. vertex_count - 1``."""

    @property
    def vertex_count(self) -> int: ...

    def neighbours(self, vertices: np.ndarray) -> Neighbours:
        """The walkable edges of these vertices (a reader's hidden edges left out)."""

    def strength(self, vertices: np.ndarray) -> np.ndarray:
        """Total edge weight at each vertex, or an upper bound of it: it only schedules pushes."""


class RemoteAdjacency(Adjacency, Protocol):
    """An ``Adjacency`` whose reads of some vertices cost a round trip (a database's)."""

    def local(self, vertices: np.ndarray) -> np.ndarray:
        """Whether each vertex's edges are read without a round trip. What a walk computes then
        depends on it: a local set that depends on the walk's own reads only keeps it a function
        of its reset and graph."""


@dataclass(frozen=True)
class SparseScores:
    """A PPR vector restricted to the vertices a solver touched (every other one scores 0)."""

    vertices: np.ndarray  # sorted, distinct
    scores: np.ndarray
    pushes: int = 0  # vertices pushed (summed over waves)
    edges: int = 0  # edge entries read: the work done

    @classmethod
    def of_dense(cls, scores: np.ndarray) -> SparseScores:
        vertices = np.flatnonzero(scores)
        return cls(vertices=vertices, scores=scores[vertices], edges=0)

    def blended(self, share: float, other: SparseScores, other_share: float) -> SparseScores:
        """``share`` x this + ``other_share`` x ``other``, over the union of their vertices."""
        at = np.searchsorted(self.vertices, other.vertices)
        held = at < len(self.vertices)
        held[held] = self.vertices[at[held]] == other.vertices[held]
        # one merge pass of the (usually few) new vertices into the sorted ones, not a sort of both
        vertices = np.insert(self.vertices, at[~held], other.vertices[~held])
        scores = np.insert(share * self.scores, at[~held], 0.0)
        scores[np.searchsorted(vertices, other.vertices)] += other_share * other.scores
        return SparseScores(vertices=vertices, scores=scores, pushes=self.pushes + other.pushes,
                            edges=self.edges + other.edges)


class Workspace:
    """Dense scratch vectors reused across pushes, so a push never allocates per vertex of the graph.

    Only the entries a push touched are cleared afterwards. One per thread.
    """

    def __init__(self) -> None:
        self._arrays: dict[str, np.ndarray] = {}

    def array(self, name: str, dtype: np.typing.DTypeLike, n: int) -> np.ndarray:
        """A zeroed scratch array of at least ``n`` entries (kept zeroed by whoever uses it)."""
        found = self._arrays.get(name)
        if found is None or len(found) < n:
            size = max(n, int(len(found) * 1.25) if found is not None else n)
            found = self._arrays[name] = np.zeros(size, dtype=dtype)
        return found

    def distinct(self, values: np.ndarray, stamp: np.ndarray) -> np.ndarray:
        """``values`` without repeats, in O(len) (``np.unique`` sorts)."""
        at = np.arange(len(values))
        stamp[values] = at
        return values[stamp[values] == at]

    def first_seen(self, values: np.ndarray) -> np.ndarray:
        """``values`` (non-negative integers) without repeats, in the order each first appears, in
        O(len): ``np.unique`` and an argsort of its first indices took ~4 ms for a 30k-entry wave
        (0.2 here). Its scratch needs no zeroing: every entry read is written first."""
        values = np.asarray(values, dtype=np.int64)
        if not len(values):
            return values
        first = self.array("first", np.int64, int(values.max()) + 1)
        at = np.arange(len(values))
        first[values] = len(values)
        np.minimum.at(first, values, at)  # ufunc.at applies every entry: the smallest index wins
        return values[first[values] == at]


_workspaces = threading.local()


def this_workspace() -> Workspace:
    """This thread's scratch vectors."""
    found = getattr(_workspaces, "value", None)
    if found is None:
        found = _workspaces.value = Workspace()
    return found


def checked_reset(vertices: np.ndarray, weights: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """A sparse reset as int64 vertices and non-negative float64 weights (NaN and infinities as 0),
    refused when it has no positive weight or a vertex outside ``0 .. n - 1``."""
    vertices = np.asarray(vertices, dtype=np.int64)
    weights = np.nan_to_num(np.asarray(weights, dtype=np.float64), nan=0.0, posinf=0.0, neginf=0.0)
    weights = np.where(weights > 0, weights, 0.0)
    if vertices.shape != weights.shape:
        raise ValueError(f"{len(vertices)} reset vertices but {len(weights)} weights")
    if weights.sum() <= 0:
        raise ValueError("reset vector has no positive entry")
    if len(vertices) and (vertices.min() < 0 or vertices.max() >= n):
        raise ValueError(f"reset vertex out of range (graph has {n} vertices)")
    return vertices, weights


MAX_WAVES = 10_000  # a safety net: with damping < 1 the residual shrinks every wave


def push_pagerank(adjacency: Adjacency, vertices: np.ndarray, weights: np.ndarray, damping: float = 0.5,
                  epsilon: float = 1e-6, workspace: Workspace | None = None) -> SparseScores:
    """PPR from the sparse reset ``weights`` at ``vertices`` by forward push, in frontier waves.

    Every wave pushes, at once, each vertex whose residual is at least
    ``epsilon`` times its strength (at least 1): it keeps ``1 - damping`` of
    that mass as its score and passes ``damping`` of it along its edges by
    weight (a vertex without walkable edges passes it to the reset, as the
    exact solvers do). It stops when no residual reaches the threshold; each
    score is then short of the exact one by less than ``epsilon`` times the
    vertex strength, summed over where the leftover mass would flow.

    Over a ``RemoteAdjacency`` a wave pushes only the vertices read without a
    round trip while there are any; the others keep their residual (it only
    grows) until a wave has nothing else, then are read and pushed at once. A
    push may happen in any order and keeps that bound, so the answer is the
    same within it; a vertex is pushed again and again, and only its first read
    waits (a store-side recall at 100k passages: 9.8 round trips instead of 13.7,
    ``benchmarks/store_read.py speed``).
    """
    n = adjacency.vertex_count
    vertices, weights = checked_reset(vertices, weights, n)
    keep = weights > 0
    restart_at, restart = vertices[keep], weights[keep] / weights.sum()
    space = workspace or this_workspace()
    residual, estimate = space.array("residual", np.float64, n), space.array("estimate", np.float64, n)
    seen, stamp = space.array("seen", bool, n), space.array("stamp", np.int64, n)
    np.add.at(residual, restart_at, restart)
    frontier = space.distinct(restart_at, stamp)
    seen[frontier] = True
    touched = [frontier]
    pushes = edges = 0
    local = getattr(adjacency, "local", None)
    waiting = frontier[:0]  # over the threshold, not local: pushed once a wave has nothing local
    try:
        for _ in range(MAX_WAVES):
            if len(waiting):
                frontier = space.distinct(np.concatenate([frontier, waiting]), stamp)
            if not len(frontier):
                break
            if local is not None:
                here = local(frontier)
                if here.any() and not here.all():
                    frontier, waiting = frontier[here], frontier[~here]
                else:
                    waiting = frontier[:0]
            mass = residual[frontier]
            residual[frontier] = 0.0
            estimate[frontier] += (1.0 - damping) * mass
            found = adjacency.neighbours(frontier)
            pushes += len(frontier)
            edges += len(found.targets)
            strength = np.bincount(found.owners, weights=found.weights, minlength=len(frontier))
            walkable = strength > 0
            share = np.divide(damping * mass, strength, out=np.zeros(len(frontier)), where=walkable)
            np.add.at(residual, found.targets, share[found.owners] * found.weights)
            candidates = found.targets
            stuck = float(mass[~walkable].sum())
            if stuck > 0:  # no walkable edge: that mass restarts
                np.add.at(residual, restart_at, damping * stuck * restart)
                candidates = np.concatenate([candidates, restart_at])
            candidates = space.distinct(candidates, stamp)
            fresh = candidates[~seen[candidates]]
            seen[fresh] = True
            touched.append(fresh)
            candidates = candidates[residual[candidates] >= epsilon]  # no threshold is below epsilon
            threshold = epsilon * np.maximum(adjacency.strength(candidates), 1.0)
            frontier = candidates[residual[candidates] >= threshold]
        reached = np.sort(np.concatenate(touched))
        scores = estimate[reached].copy()
    finally:
        for part in touched:
            residual[part] = 0.0
            estimate[part] = 0.0
            seen[part] = False
    found_mass = scores > 0
    return SparseScores(vertices=reached[found_mass], scores=scores[found_mass], pushes=pushes, edges=edges)


@dataclass(frozen=True)
class CsrAdjacency:
    """An ``Adjacency`` over a symmetric CSR matrix: every edge stored in both directions."""

    indptr: np.ndarray
    targets: np.ndarray
    weights: np.ndarray
    strengths: np.ndarray

    @classmethod
    def of(cls, matrix: sparse.csr_matrix) -> CsrAdjacency:
        matrix = sparse.csr_matrix(matrix)
        return cls(indptr=matrix.indptr.astype(np.int64), targets=matrix.indices.astype(np.int64),
                   weights=matrix.data.astype(np.float64), strengths=np.asarray(matrix.sum(axis=1)).ravel())

    @classmethod
    def of_graph(cls, graph: ig.Graph) -> CsrAdjacency:
        n = graph.vcount()
        ends = np.asarray(graph.get_edgelist(), dtype=np.int64).reshape(-1, 2)
        weights = np.asarray(graph.es["weight"] if graph.ecount() else [], dtype=np.float64)
        matrix = sparse.csr_matrix((np.concatenate([weights, weights]),
                                    (np.concatenate([ends[:, 0], ends[:, 1]]),
                                     np.concatenate([ends[:, 1], ends[:, 0]]))), shape=(n, n))
        return cls.of(matrix)

    @property
    def vertex_count(self) -> int:
        return len(self.indptr) - 1

    def neighbours(self, vertices: np.ndarray) -> Neighbours:
        counts, at = segment_indices(self.indptr, vertices)
        return Neighbours(owners=np.repeat(np.arange(len(vertices)), counts), targets=self.targets[at],
                          weights=self.weights[at])

    def strength(self, vertices: np.ndarray) -> np.ndarray:
        return self.strengths[vertices]
