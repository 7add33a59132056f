"""Plain retrieval baselines: dense, keyword (BM25) and their reciprocal-rank fusion."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import numpy as np

from hippo.memory.state import DerivedState
from hippo.store.base import Spaces

if TYPE_CHECKING:  # the sources import this module
    from hippo.memory.source import RecallSource

Mode = Literal["dense", "bm25", "hybrid"]
RRF_K = 60  # the constant of Cormack et al.; flattens the head of each list


def dense_ranking(state: DerivedState, q: np.ndarray, spaces: Spaces, limit: int) -> list[tuple[str, float]]:
    """The ``limit`` visible passages closest to ``q`` (the search runs on the reader's spaces only)."""
    view = state.projection.view(spaces)
    (scores, vertices), = state.passages.search(q, limit, view.codes)
    ids = state.projection.record_ids
    return [(ids[v], float(c)) for v, c in zip(vertices.tolist(), scores.tolist(), strict=True)]


def keyword_ranking(state: DerivedState, query: str, spaces: Spaces, limit: int) -> list[tuple[str, float]]:
    """BM25 with the statistics of the passages the reader may see (``hippo.memory.keywords``)."""
    ids = state.projection.record_ids
    return [(ids[vertex], score) for vertex, score in keyword_vertices(state, query, spaces, limit)]


def keyword_vertices(state: DerivedState, query: str, spaces: Spaces, limit: int) -> list[tuple[int, float]]:
    """``keyword_ranking`` by passage vertex (the keyword index's rows are the projection's vertices)."""
    live = state.projection.live
    return state.keywords.top(query, state.projection.view(spaces).codes, lambda rows: live[rows], limit)


def source_rankings(source: RecallSource, q: np.ndarray | None, query: str | None,
                    limit: int) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
    """The dense ranking of ``q`` and the BM25 ranking of ``query`` (each skipped when None) from any
    source's searches: store-side, Neo4j's indexes under the in-process rules
    (``hippo.memory.store_source``), so a store-side server keeps no copy of the graph for them."""
    dense: list[tuple[str, float]] = []
    if q is not None:
        found = source.nearest_passages(q, limit)
        dense = list(zip(source.record_ids(found.handles.tolist()), found.scores.tolist(), strict=True))
    sparse: list[tuple[str, float]] = []
    if query is not None:
        scored = source.keyword_scores(query, limit)
        ids = source.record_ids(list(scored))
        sparse = sorted(zip(ids, scored.values(), strict=True), key=lambda pair: (-pair[1], pair[0]))[:limit]
    return dense, sparse


def reciprocal_rank_fusion(*rankings: list[tuple[str, float]]) -> list[tuple[str, float]]:
    fused: dict[str, float] = {}
    for ranking in rankings:
        for rank, (pid, _) in enumerate(ranking):
            fused[pid] = fused.get(pid, 0.0) + 1.0 / (RRF_K + rank + 1)
    return sorted(fused.items(), key=lambda kv: (-kv[1], kv[0]))
