"""The settings of an approximate vector search (``AnnSettings``): when a shard becomes an HNSW
graph, how it is linked, the recall its walk width is calibrated to, how many candidates go back
to exact scoring (``hippo.memory.shards``, ``hippo.memory.calibration``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

Gather = Callable[[np.ndarray], np.ndarray]
"""Labels -> their float32 vectors (the exact scores of a shortlist)."""


@dataclass(frozen=True)
class AnnSettings:
    exact_max: int = 20_000  # rows a shard scans exactly before it becomes an HNSW graph
    recall: float = 0.99  # recall@10 the search is calibrated to (see ``calibration_queries``)
    calibration: int = 128  # calibration queries
    query_noise: float = 1.5  # their distance from a held vector (cosine ~0.55)
    blends: bool = True  # ``ef`` fitted to blends too (the kinds a whole question searches)
    blend_cosine: float = 0.3  # a blend's two held vectors are about this close
    near_noise: float = 0.75  # near queries (cosine ~0.8: synonym linking)
    near_floor: float = 0.8  # ... of which only neighbours at least this close are wanted
    links: int = 32  # HNSW M
    # efConstruction. A better-linked graph is found by a narrower walk: on 300k synthetic fact vectors,
    # recall@10 0.988 at ef 384 where 40 (the first default) needed 1,024 for 0.989, for a 1.7x slower build.
    build_ef: int = 100
    # ... and from ``wide_build_from`` rows: on 1M synthetic fact vectors 200 found 0.990 at ef 288 (1.32 ms a
    # search) where 100 needed ef 1,024 for 0.984 (3.03 ms); at 300k the two were within 0.001
    wide_build_ef: int = 200
    wide_build_from: int = 500_000
    min_ef: int = 128  # real MuSiQue phrases needed ~128 for recall@1 0.995 where noisy copies needed 40
    max_ef: int = 1_024
    # A walk 1.5x wider that finds less than this more of the true top 10 is not worth its cost: where
    # ``recall`` is out of reach (the graph, not the walk, limits it) calibration stops at the plateau
    # instead of walking at ``max_ef`` for a few hundredths.
    plateau: float = 0.004
    plateau_from: float = 0.95  # ... once it finds this much: below, a flat step is a graph still being navigated
    rerank: int = 4  # a search re-scores rerank x k candidates exactly
    min_rerank: int = 40
    # ... and a search for more than ``many`` (the passage prior's top 200) re-scores ``rerank_many`` x k: the
    # shortlist is also the least walk width, and 8-bit codes order a wide walk's candidates well enough. On the
    # 100k synthetic store's passages a k-200 search kept 0.980 of the exact top 200 and 0.9987 of its top 10
    # at 2 (1.6 ms) against 0.992 and 0.9993 at 4 (3.1 ms); recall p50 20.3 -> 18.1 ms, top 5 hits 0.999 alike.
    many: int = 50
    rerank_many: int = 2
    rebuild_dead: float = 0.25  # share of removed records at which a graph is rebuilt
    # A graph is calibrated again once it holds this many times the rows it was last calibrated at
    # (geometric, so amortized O(1) a row). 2 left the 200k store's facts graph, calibrated at 1,003,520
    # rows, walking at that width at 2,000,000 (1.99x: not yet due): 0.974 of the questions' top 10,
    # where a fit of the whole graph walks 1.5x wider (648) and finds 0.982.
    recalibrate_growth: float = 1.5

    def build_width(self, rows: int) -> int:
        """efConstruction for a graph of ``rows``."""
        return self.wide_build_ef if rows >= self.wide_build_from else self.build_ef
