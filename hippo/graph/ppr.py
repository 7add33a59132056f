"""Personalized PageRank as a pure function of a graph and a reset vector."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import igraph as ig
import numpy as np
from scipy import sparse
from threadpoolctl import ThreadpoolController


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
