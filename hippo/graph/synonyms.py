"""Synonym edges: entity pairs whose embeddings are close.

Only new entities are queried (against all), so indexing one document costs
one kNN search per new entity instead of HippoRAG's all-vs-all on every call;
the engine searches its entity index for the stored ones (``synonym_pairs``
takes the neighbours found), ``synonym_edges`` does it all by brute force.
"""

from __future__ import annotations

import faiss
import numpy as np

from hippo.models import Synonym
from hippo.text import alnum_count


def synonym_edges(
    new_ids: list[str],
    new_keys: list[str],
    new_vectors: np.ndarray,
    all_ids: list[str],
    all_vectors: np.ndarray,
    *,
    threshold: float,
    max_neighbors: int,
) -> list[Synonym]:
    """Pairs (new, any) with cosine >= threshold, at most ``max_neighbors`` per new entity.

    ``all_*`` must include the new entities. Names with two or fewer letters
    or digits get no synonyms: "li", "42" are close to everything short.
    """
    if not new_ids or max_neighbors <= 0 or len(all_ids) < 2:
        return []
    queries = linkable(new_keys)
    if not queries:
        return []
    index = faiss.IndexFlatIP(all_vectors.shape[1])
    index.add(np.ascontiguousarray(all_vectors, dtype=np.float32))
    k = min(max_neighbors + 1, len(all_ids))
    scores, neighbors = index.search(np.ascontiguousarray(new_vectors[queries], dtype=np.float32), k)
    found = [(scores[row], [all_ids[n] for n in neighbors[row] if n >= 0]) for row in range(len(queries))]
    return synonym_pairs([new_ids[q] for q in queries], found, threshold=threshold, max_neighbors=max_neighbors)


def linkable(keys: list[str]) -> list[int]:
    """Positions of names long enough to get synonyms."""
    return [i for i, key in enumerate(keys) if alnum_count(key) > 2]


def synonym_pairs(ids: list[str], neighbours: list[tuple[np.ndarray, list[str]]], *, threshold: float,
                  max_neighbors: int) -> list[Synonym]:
    """Synonym edges from each entity's nearest neighbours (scores best first, itself possibly
    among them): the first ``max_neighbors + 1`` at or above ``threshold``, itself left out."""
    pairs: dict[tuple[str, str], float] = {}
    for me, (scores, others) in zip(ids, neighbours, strict=True):
        for score, other in list(zip(scores, others, strict=False))[: max_neighbors + 1]:
            if score < threshold:
                break  # results are sorted by score
            if other == me:
                continue
            a, b = (me, other) if me < other else (other, me)
            pairs[(a, b)] = max(pairs.get((a, b), 0.0), float(score))
    return [Synonym(a=a, b=b, score=round(min(s, 1.0), 6)) for (a, b), s in sorted(pairs.items())]
