"""What no reader may walk: per vertex, the weight of its entries hidden from everyone.

A forgotten passage's edges stay in the projection, unwalked, and an entity
no live passage mentions is seen by no one, nor are its synonyms. A reader
of every space walks exactly what is left, so its strength at a vertex is
``strength - hidden``, known without reading the vertex's entries. Without
this, one forgotten memory sent every later recall down the path that reads
strengths entry by entry (on 2Wiki, ~11k vertices and 250k entries a walk).

``hidden`` moves only where a write changes what is walkable: the entries of
the passages retired or revived (at the passage, the entities it mentions and
its facts' ends) and the synonyms of entities whose last live mention came or
went. Each of those vertices is summed again from its entries, never patched
by a difference, so no rounding piles up over many forgets.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from hippo.graph.edges import SYNONYM

if TYPE_CHECKING:
    from hippo.graph.projection import GraphProjection


def unwalkable(projection: GraphProjection, vertices: np.ndarray) -> np.ndarray:
    """Per vertex, the weight of its entries no reader may walk (a relation or mention read from a
    passage that is not live, a synonym with an entity no live passage mentions): 0 when there are
    none, else its strength less the sum of the others, so that ``strength - hidden`` is what a
    walk sums (the entries hold weights at float32; ``strength`` added them at float64)."""
    projection.seal()
    vertices = np.asarray(vertices, dtype=np.int64)
    owners, columns = projection.edges.entries(vertices)
    if not len(owners):
        return np.zeros(len(vertices))
    kinds, via = columns["kinds"], columns["via"].astype(np.int64)
    hidden = np.zeros(len(owners), dtype=bool)
    read = kinds != SYNONYM
    inside = (via >= 0) & (via < projection.vertex_count)
    from_passage = np.zeros(len(owners), dtype=bool)
    from_passage[inside] = projection.is_passage[via[inside]] & projection.live[via[inside]]
    hidden[read] = ~from_passage[read]
    synonym = ~read
    if synonym.any():
        ends = np.concatenate([vertices[owners[synonym]], columns["targets"][synonym].astype(np.int64)])
        seen = projection.support.counts(None, ends) > 0
        half = int(synonym.sum())
        hidden[synonym] = ~(seen[:half] & seen[half:])
    weights = columns["weights"].astype(np.float64)
    some = np.bincount(owners[hidden], minlength=len(vertices)) > 0
    walkable = np.bincount(owners[~hidden], weights=weights[~hidden], minlength=len(vertices))
    return np.where(some, projection.strength[vertices] - walkable, 0.0)


def touched_by(projection: GraphProjection, passages: np.ndarray) -> np.ndarray:
    """The vertices holding entries read from these passages: the passages, the entities they
    mention, their facts' subjects and objects."""
    passages = np.asarray(passages, dtype=np.int64)
    _, mentioned = projection.mentions_of(passages)
    first, count = projection.fact_first[passages], projection.fact_count[passages].astype(np.int64)
    has = first >= 0
    first, count = first[has], count[has]
    rows = np.repeat(first - np.cumsum(count) + count, count) + np.arange(int(count.sum()))  # each passage's rows
    ends = np.concatenate([projection.fact_subject[rows], projection.fact_object[rows]]).astype(np.int64)
    return np.unique(np.concatenate([passages, mentioned, ends[ends >= 0]]))


def with_synonyms(projection: GraphProjection, entities: np.ndarray) -> np.ndarray:
    """These entities and every entity a synonym joins them to."""
    entities = np.asarray(entities, dtype=np.int64)
    if not len(entities):
        return entities
    projection.seal()
    _, columns = projection.edges.entries(entities)
    neighbours = columns["targets"][columns["kinds"] == SYNONYM].astype(np.int64)
    return np.unique(np.concatenate([entities, neighbours]))
