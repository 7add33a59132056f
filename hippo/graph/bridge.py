"""The bridge hop: seeds for a second walk, read from the first walk's best passages.

A two-hop question names the start of its chain ("the director of film X")
and asks about the end ("where did he die?"). The first walk finds X's
passage; the passage it needs next is about an entity X's passage mentions
(the director), which the question never names. With restart probability
0.5 little of the first walk's mass travels two edges past X's passage, so
the second walk restarts there: at the entities of the passages the first
walk ranked highest, weighted by that passage's mass and by how specific the
entity is. Entities found in one passage only lead nowhere and are skipped.
An entity takes its best passage's weight, not the sum over them: what all
the top passages share is their common topic, which the first walk covered
(summing: R@5 -0.5 on MuSiQue, -1.0 on HotpotQA).

Which of a passage's entities leads on is what its facts say: with
``relevance``, an entity weighs by the best cosine with the query of a fact
of that passage naming it ("Big Eyes -- directed by -- Tim Burton" for "Big
Eyes' director"), and an entity no fact names is not a bridge. That needs
triples worth reading: with an LLM's it is recall's ``bridge_source="facts"``;
spaCy's dependency triples mislead it (measured in the README).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from hippo.graph.scoring import passage_counts, top_indices, top_k

Relevance = Callable[[int], dict[int, float]]
"""Passage vertex -> {entity vertex: how well a fact of that passage naming it matches the query}."""


def fact_relevance(rows: np.ndarray, cosines: np.ndarray, ends: Callable[[int], list[int]]) -> dict[int, float]:
    """Entity vertex -> the best cosine with the query (negative: 0) of these facts that name it."""
    best: dict[int, float] = {}
    for row, cosine in zip(np.asarray(rows).tolist(), np.asarray(cosines, dtype=np.float64).tolist(), strict=True):
        for v in ends(int(row)):
            best[v] = max(best.get(v, 0.0), max(cosine, 0.0))
    return best


def bridge_seeds(mass: np.ndarray, passage_vertices: np.ndarray, mentions: Callable[[int], np.ndarray],
                 passage_count, *, passages: int, k: int,
                 relevance: Relevance | None = None) -> dict[int, float]:
    """Entity vertex -> weight (max 1) for the second walk.

    ``mass`` is the first walk's score of each passage in ``passage_vertices``;
    ``mentions(passage vertex)`` gives the entity vertices a passage mentions and
    ``passage_count[entity]`` how many visible passages mention it. The
    ``passages`` best give their entities ``mass / best mass / passages
    mentioning the entity`` (the best such value); the ``k`` heaviest are kept.
    """
    top = [i for i in top_indices(mass, passages) if mass[i] > 0]
    if not top:
        return {}
    best = float(mass[top[0]])
    mentioned = [np.unique(np.asarray(mentions(int(passage_vertices[i])), dtype=np.int64)) for i in top]
    # every count at once: a store-side source may ask the store for those it does not hold
    count_of = passage_counts(passage_count, set(np.concatenate(mentioned).tolist()))
    weights: dict[int, float] = {}
    for i, entities in zip(top, mentioned, strict=True):
        share = float(mass[i]) / best
        related = relevance(int(passage_vertices[i])) if relevance is not None else None
        for entity in entities.tolist():
            count = count_of[entity]
            weight = share / count if count > 1 else 0.0
            if related is not None:
                weight *= related.get(int(entity), 0.0)
            if weight > 0:
                weights[int(entity)] = max(weights.get(int(entity), 0.0), weight)
    seeds = top_k(dict(weights), k)
    if not seeds:
        return {}
    high = max(seeds.values())
    return {v: w / high for v, w in seeds.items()}

