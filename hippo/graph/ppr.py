"""Personalized PageRank as a pure function of a graph and a reset vector."""

from __future__ import annotations

from functools import cache

import igraph as ig
import numpy as np
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
