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
    # A node's bytes in the graph every search walks: its codes (``code_bits`` a dimension) and its links
    # (``links`` a node, twice that at the base layer). Both were halved from 8 bits and 32 links (656 B a
    # MiniLM vector) to 4 and 16 (336 B) at stop 55 (``benchmarks/ann_codes.py``): on 2Wiki's 65k real fact
    # vectors recall@10 after re-ranking 0.993 / 0.994 at ef 256 / 512 against 0.989 / 0.992. At 1M passages
    # (~13.5M vectors) the graphs are ~4.6 GB instead of ~8.9: what lets recall's working set fit 12 GB.
    code_bits: int = 4
    links: int = 16  # HNSW M
    # efConstruction. A better-linked graph is found by a narrower walk: on 300k synthetic fact vectors (8-bit
    # codes, 32 links) recall@10 0.988 at ef 384 where 40 (the first default) needed 1,024 for 0.989. 4-bit codes
    # and 16 links need 200: at 100 they found 0.967 at ef 512 in 300k synthetic fact vectors (200: 0.981; the
    # 8-bit, 32-link graph at 100: 0.984), and in the 10k store's 100k facts, calibrated, 0.974 of the
    # questions' top 10 (200: 0.985). Twice the build's work a row: the 10k store indexed in 80 s, not 60.
    build_ef: int = 200
    # ... and from ``wide_build_from`` rows (8-bit, 32 links, 1M synthetic facts: 200 found 0.990 at ef 288 where
    # 100 needed ef 1,024 for 0.984); equal to ``build_ef`` now, so every graph is linked at one width.
    wide_build_ef: int = 200
    wide_build_from: int = 500_000
    # ... and with ``wide_links`` links a node. Past half a million rows the links, more than the walk or the shortlist,
    # bound what a search finds: over the 100k store's 1M synthetic fact vectors, built whole at 200, its questions'
    # re-ranked top 10 held 0.970 / 0.985 / 0.989 of the exact one at ef 128 / 432 / 1,024 with 16 links, 0.982 /
    # 0.988 / 0.991 with 32 (``results/ann_codes-links-stop60.md``; 8-bit codes and 16 links: 0.978 / 0.988 / 0.992
    # for 64 B a node more than 32 links cost); in the engine 0.982 -> 0.986 at its calibrated ef 432. At 1M
    # passages the 16-link graph of 10M facts plateaued at 0.951 by ef 1,024. +1.3 GB at 10M facts.
    wide_links: int = 32
    # A shard past ``graph_rows`` rows is held as several graphs of at most that many (``hippo.memory.segments``):
    # one 32-link graph of 1M synthetic fact vectors found 0.988 of its questions' top 10 at ef 432 (stop 60), one of
    # 6.76M 0.971 at ef 972, where no wider walk gained more (stop 61); the 100k store's 1M facts in two graphs found
    # 0.985 where one found 0.979, for 0.3-2.1 ms more a recall (stop 62, ``results/scale-stop62-graphs.md``).
    graph_rows: int = 2_097_152
    min_ef: int = 128  # real MuSiQue phrases needed ~128 for recall@1 0.995 where noisy copies needed 40
    max_ef: int = 1_024
    # A walk 1.5x wider that finds less than this more of the true top 10 is not worth its cost: where
    # ``recall`` is out of reach (the graph, not the walk, limits it) calibration stops at the plateau
    # instead of walking at ``max_ef`` for a few hundredths.
    plateau: float = 0.004
    plateau_from: float = 0.95  # ... once it finds this much: below, a flat step is a graph still being navigated
    rerank: int = 4  # a search re-scores rerank_margin + rerank x k candidates exactly (below)
    min_rerank: int = 40
    # ... plus ``rerank_margin``: the 4-bit codes misorder a walk's candidates by a spread of scores, not a share of
    # k, so a search for 10 re-scores 40 + 4 x 10. At 40 alone the 100k store's questions' searches for 10 in its
    # 1M facts found 0.975 of the exact top 10 at ef 648 (0.976 at 1,024: the shortlist, not the walk, limited it);
    # at 80, 0.984 (ef 432: 0.982), for ~0.05 ms more a search.
    rerank_margin: int = 40
    # ... and a search for more than ``many`` (the passage prior's top 200) re-scores ``rerank_many`` x k: the
    # shortlist is also the least walk width, and the codes order a wide walk's candidates well enough. On the
    # 100k synthetic store's passages (8-bit codes) a k-200 search kept 0.980 of the exact top 200 and 0.9987 of
    # its top 10 at 2 (1.6 ms) against 0.992 and 0.9993 at 4 (3.1 ms); recall p50 20.3 -> 18.1 ms, top 5 hits
    # 0.999 alike. With 4-bit codes its questions' searches still find 0.998 of the top 200 there (stop 55).
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

    def links_for(self, rows: int) -> int:
        """HNSW M for a graph of ``rows``."""
        return self.wide_links if rows >= self.wide_build_from else self.links

    def rebuilds(self, linked: int, links: int, rows: int, grown: int, upgrade: bool = False) -> bool:
        """Whether a graph of ``rows`` whose narrowest rows were linked at ``linked`` with ``links`` a node
        is built again whole as it grows to ``grown``: its rows were linked narrower than a graph that
        large is built, or it crosses ``wide_build_from`` with fewer links than a graph past it gets. One
        already past it with fewer (an older hippo's) keeps growing as it is, unless ``upgrade``: a write
        after an upgrade is not made to link 10M facts again (``VectorIndex.relink`` does it when asked)."""
        crossing = upgrade or rows < self.wide_build_from <= grown
        return linked < self.build_width(grown) or (crossing and links < self.links_for(grown))
