"""Seeds -> PPR -> read-out: the one walk recall, ``walk`` and ``neighbors`` share.

Recall chooses its seeds from a query, a caller steering the graph names them;
from there the path is the same: Personalized PageRank from the sparse reset
over the reader's edges (``RecallSource.pagerank``), then the visible passages
it reached, scored by the read-out the settings name.

PPR is linear in its reset vector, so a walk from more seeds (recall's bridge
hop adds the entities of the first walk's best passages) is the first walk
plus a walk from the new seeds alone, each weighed by its share of the reset
(``Walk.extended``): the second walk costs what its few seeds cost, not the
whole reset again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from hippo.config import Settings
from hippo.graph.ppr import SparseScores
from hippo.graph.scoring import kth_largest, top_indices
from hippo.memory.source import RecallSource


@dataclass(frozen=True)
class Tail:
    """Per node, the reset weight a prior would have given it and the sparse reset left out
    (``weights(vertices)``), never more than ``bound``: a read-out that wants only the best few
    passages asks it only of those it could lift among them."""

    weights: Callable[[np.ndarray], np.ndarray]
    bound: float


@dataclass(frozen=True)
class Walk:
    """A PPR vector and the reset mass it is normalized by (the sum of the positive weights)."""

    ppr: SparseScores
    mass: float

    @classmethod
    def of(cls, source: RecallSource, nodes: np.ndarray, weights: np.ndarray, settings: Settings,
           accuracy: float = 1.0) -> Walk:
        """PPR from the reset (``weights`` at ``nodes``). ``accuracy``: this walk's share of a larger
        reset it will be added into; the push's threshold grows by its inverse, so every walk of
        a sum is accurate to the same absolute ``ppr_epsilon``."""
        s = settings
        weights = np.asarray(weights, dtype=np.float64)
        ppr = source.pagerank(np.asarray(nodes, dtype=np.int64), weights, s.damping, solver=s.ppr_solver,
                              epsilon=min(s.ppr_epsilon / accuracy, 0.5), exact_max_edges=s.ppr_exact_max_edges)
        return cls(ppr=ppr, mass=float(np.maximum(np.nan_to_num(weights), 0.0).sum()))

    def extended(self, source: RecallSource, nodes: np.ndarray, weights: np.ndarray, settings: Settings) -> Walk:
        """The walk from this reset plus ``weights`` at ``nodes``, by linearity."""
        more = float(np.maximum(np.nan_to_num(np.asarray(weights, dtype=np.float64)), 0.0).sum())
        if more <= 0:
            return self
        total = self.mass + more
        added = Walk.of(source, nodes, weights, settings, accuracy=more / total)
        return Walk(ppr=self.ppr.blended(self.mass / total, added.ppr, more / total), mass=total)

    def with_tail(self, tail: Tail | None, settings: Settings, at: np.ndarray | None = None) -> SparseScores:
        """The scores plus the prior the sparse reset left out (``tail``): PPR restarts (1 - damping)
        of the reset at each node, so that is its direct term. ``at``: the only vertices (a mask
        over ``ppr.vertices``) that get it."""
        if tail is None:
            return self.ppr
        scores, vertices = self.ppr.scores.copy(), self.ppr.vertices
        where = slice(None) if at is None else np.flatnonzero(at)
        scores[where] += (1.0 - settings.damping) * tail.weights(vertices[where]) / self.mass
        return SparseScores(vertices=vertices, scores=scores, pushes=self.ppr.pushes, edges=self.ppr.edges)

    def tail_scale(self, settings: Settings) -> float:
        """What a unit of tail weight adds to a node's score (``with_tail``, up to rounding)."""
        return (1.0 - settings.damping) / self.mass


def spread(source: RecallSource, nodes: np.ndarray, weights: np.ndarray, settings: Settings,
           tail: Tail | None = None) -> SparseScores:
    """PPR mass from the reset (``weights`` at ``nodes``), with the ``tail`` the reset left out."""
    return Walk.of(source, nodes, weights, settings).with_tail(tail, settings)


def readout(source: RecallSource, walk: Walk, settings: Settings, tail: Tail | None = None,
            top: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(the visible passages the walk reached, one score each). ``top``: only the best ``top``
    scores need be exact; with the passage read-out, a passage whose walk score cannot reach them
    even with the largest tail keeps its walk score alone (on 2Wiki the walk reaches ~thousands of
    passages; a store-side reader pays a cosine read for each one the tail is asked of)."""
    if settings.passage_readout != "passage":
        return source.passage_readout(walk.with_tail(tail, settings), settings.passage_readout,
                                      settings.readout_blend)
    # a passage's own mass, what every source's read-out gives: the reached passages are looked up
    # once for the tail's bound and the read-out (on 2Wiki ~10k reached vertices, 50 us a look)
    passage = np.asarray(source.visible_passage[walk.ppr.vertices], dtype=bool)
    scores = walk.with_tail(tail, settings, _liftable(walk, passage, settings, tail, top))
    at = np.flatnonzero(passage)
    return scores.vertices[at], scores.scores[at]


def _liftable(walk: Walk, passage: np.ndarray, settings: Settings, tail: Tail | None,
              top: int | None) -> np.ndarray | None:
    """Mask of the reached vertices (``passage``: those that are visible passages) whose tail can
    change the ``top`` best passages (None: all)."""
    if tail is None or top is None:
        return None
    scores = walk.ppr.scores
    own = scores[passage]
    if len(own) <= top:
        return None
    # ``top`` passages score at least ``floor`` without their tail (it is never negative): one whose
    # walk score plus the largest tail stays below it cannot be among them
    floor = kth_largest(own, top)
    lift = walk.tail_scale(settings) * tail.bound
    return passage & (scores >= floor - lift * (1 + 1e-9))


def passage_mass(source: RecallSource, nodes: np.ndarray, weights: np.ndarray, settings: Settings,
                 tail: Tail | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(the visible passages a walk from this reset reached, one score each)."""
    return readout(source, Walk.of(source, nodes, weights, settings), settings, tail)


def ranking(source: RecallSource, passages: np.ndarray, mass: np.ndarray, k: int, *,
            reached_only: bool = False) -> list[tuple[str, float]]:
    """The ``k`` best passages by mass as (id, mass); ``reached_only`` leaves out those with none."""
    order = [i for i in top_indices(mass, k) if not reached_only or mass[i] > 0]
    ids = source.record_ids([int(passages[i]) for i in order])
    return [(pid, float(mass[i])) for pid, i in zip(ids, order, strict=True)]
