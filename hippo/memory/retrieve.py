"""Plain retrieval baselines: dense, keyword (BM25) and their reciprocal-rank fusion."""

from __future__ import annotations

from typing import Literal

import numpy as np

from hippo.memory.state import DerivedState
from hippo.store.base import Spaces

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
    view = state.projection.view(spaces)
    ids = state.projection.record_ids
    live = state.projection.live
    return [(ids[row], score)
            for row, score in state.keywords.top(query, view.codes, lambda rows: live[rows], limit)]


def reciprocal_rank_fusion(*rankings: list[tuple[str, float]]) -> list[tuple[str, float]]:
    fused: dict[str, float] = {}
    for ranking in rankings:
        for rank, (pid, _) in enumerate(ranking):
            fused[pid] = fused.get(pid, 0.0) + 1.0 / (RRF_K + rank + 1)
    return sorted(fused.items(), key=lambda kv: (-kv[1], kv[0]))
