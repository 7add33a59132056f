"""Seeds -> PPR -> read-out: the one walk recall, ``walk`` and ``neighbors`` share.

Recall chooses its seeds from a query, a caller steering the graph names them;
from there the path is the same: Personalized PageRank from the sparse reset
over the reader's edges (``RecallSource.pagerank``), then the visible passages
it reached, scored by the read-out the settings name.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from hippo.config import Settings
from hippo.graph.ppr import SparseScores
from hippo.graph.scoring import top_indices
from hippo.memory.source import RecallSource

Tail = Callable[[np.ndarray], np.ndarray]
"""Per node, the reset weight a prior would have given it and the sparse reset left out."""


def spread(source: RecallSource, nodes: np.ndarray, weights: np.ndarray, settings: Settings,
           tail: Tail | None = None) -> SparseScores:
    """PPR mass from the reset (``weights`` at ``nodes``). ``tail``: the prior the reset left
    out; PPR restarts (1 - damping) of the reset at each node, so that is its direct term."""
    s = settings
    ppr = source.pagerank(np.asarray(nodes, dtype=np.int64), np.asarray(weights, dtype=np.float64), s.damping,
                          solver=s.ppr_solver, epsilon=s.ppr_epsilon, exact_max_edges=s.ppr_exact_max_edges)
    if tail is not None:
        direct = (1.0 - s.damping) * tail(ppr.vertices) / float(np.maximum(weights, 0.0).sum())
        ppr = SparseScores(vertices=ppr.vertices, scores=ppr.scores + direct, pushes=ppr.pushes, edges=ppr.edges)
    return ppr


def passage_mass(source: RecallSource, nodes: np.ndarray, weights: np.ndarray, settings: Settings,
                 tail: Tail | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(the visible passages the walk reached, one score each)."""
    return source.passage_readout(spread(source, nodes, weights, settings, tail), settings.passage_readout,
                                  settings.readout_blend)


def ranking(source: RecallSource, passages: np.ndarray, mass: np.ndarray, k: int, *,
            reached_only: bool = False) -> list[tuple[str, float]]:
    """The ``k`` best passages by mass as (id, mass); ``reached_only`` leaves out those with none."""
    order = [i for i in top_indices(mass, k) if not reached_only or mass[i] > 0]
    ids = source.record_ids([int(passages[i]) for i in order])
    return [(pid, float(mass[i])) for pid, i in zip(ids, order, strict=True)]
