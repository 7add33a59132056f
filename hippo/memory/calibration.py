"""The queries an HNSW graph's walk width (``ef``) is calibrated on, and the exact top ten they are
judged against (``hippo.memory.shards.HnswShard``).

Calibration asks for the walk a recall's own queries need, without a recall's queries at hand:
noisy copies of held vectors stand for a question's phrases (the entity search), blends of two
held vectors that are not close for a whole question (the passage and fact searches), near
copies for the synonym search.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from hippo.memory.ann import AnnSettings, Gather
    from hippo.memory.segments import Results

CALIBRATION = 4  # how ``ef`` is calibrated (2: blends too; 3: the width for the best one too; 4: with a search's
# shortlist widened by ``rerank_margin``); a graph saved under another is calibrated again


def outdated(saved: int | None) -> bool:
    """Whether graphs saved under calibration ``saved`` (None: saved before it was kept, 1) were fitted
    by another rule than this one."""
    return (saved or 1) != CALIBRATION


def calibration_queries(labels: np.ndarray, gather: Gather, settings: AnnSettings,
                         rng: np.random.Generator) -> list[np.ndarray]:
    """Parts of ``calibration`` unit queries each: noisy copies of held vectors at the query distance;
    blends of a held vector and the one of a sample closest to ``blend_cosine`` from it (when
    ``settings.blends``); noisy copies at the near distance (synonym searches), always last."""
    held = gather(labels[rng.choice(len(labels), min(settings.calibration, len(labels)), replace=False)])
    dim = held.shape[1]
    far, near = (held + noise / np.sqrt(dim) * rng.standard_normal(held.shape).astype(np.float32)
                 for noise in (settings.query_noise, settings.near_noise))
    parts = [far]
    if settings.blends:
        sample = gather(labels[np.sort(rng.choice(len(labels), min(4_096, len(labels)), replace=False))])
        cosines = held @ sample.T
        apart = np.abs(cosines - settings.blend_cosine)
        apart[cosines > 0.999] = np.inf  # not itself (nor a copy of it)
        parts.append(held + sample[np.argmin(apart, axis=1)])
    return [(part / np.linalg.norm(part, axis=1, keepdims=True)).astype(np.float32) for part in (*parts, near)]


def best_ten(best: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """Each row's ten highest of ``best`` and ``scores``, descending."""
    both = np.concatenate([best, scores], axis=1)
    ten = np.partition(both, both.shape[1] - 10, axis=1)[:, -10:] if both.shape[1] > 10 else both
    return -np.sort(-ten, axis=1)


def narrowest_width(found_at: Callable[[int], float], start: int, settings: AnnSettings) -> int:
    """The smallest walk width from ``start`` (x1.5 a step, up to ``settings.max_ef``) at which
    ``found_at(width)`` reaches ``settings.recall``, or the last before a step that gained less than
    ``settings.plateau`` past ``settings.plateau_from``."""
    ef, recall = start, found_at(start)
    while recall < settings.recall and ef < settings.max_ef:
        wider = min(int(ef * 1.5), settings.max_ef)
        found = found_at(wider)
        if recall >= settings.plateau_from and found - recall < settings.plateau:
            break
        ef, recall = wider, found
    return ef


def found_share(got: Results, best: np.ndarray, floor: float, top: int) -> float:
    """The share of each query's exact best ``top`` (``best``: its exact top ten, descending) at or
    above ``floor`` that a search's scores hold (ties count as found), averaged over the queries."""
    hits = []
    for (scores, _), exact in zip(got, best[:, :top], strict=True):
        wanted = int((exact >= floor).sum())
        ours = np.sort(scores)[::-1][:wanted]
        hits.append(float((ours >= exact[wanted - 1] - 1e-6).sum()) / wanted if wanted else 1.0)
    return float(np.mean(hits))
