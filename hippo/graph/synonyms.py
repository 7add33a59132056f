"""Synonym edges: entity pairs whose embeddings are close.

Only new entities are queried (against all), so indexing one document costs
one kNN search per new entity instead of HippoRAG's all-vs-all on every call.
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
    queries = [i for i, key in enumerate(new_keys) if alnum_count(key) > 2]
    if not queries:
        return []
    index = faiss.IndexFlatIP(all_vectors.shape[1])
    index.add(np.ascontiguousarray(all_vectors, dtype=np.float32))
    k = min(max_neighbors + 1, len(all_ids))
    scores, neighbors = index.search(np.ascontiguousarray(new_vectors[queries], dtype=np.float32), k)
    pairs: dict[tuple[str, str], float] = {}
    for row, q in enumerate(queries):
        me = new_ids[q]
        for score, n in zip(scores[row], neighbors[row], strict=True):
            if n < 0 or score < threshold:
                break  # results are sorted by score
            other = all_ids[n]
            if other == me:
                continue
            a, b = (me, other) if me < other else (other, me)
            pairs[(a, b)] = max(pairs.get((a, b), 0.0), float(score))
    return [Synonym(a=a, b=b, score=round(min(s, 1.0), 6)) for (a, b), s in sorted(pairs.items())]
