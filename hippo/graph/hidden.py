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

A reader of some spaces also misses what only the other spaces' passages
hold: ``unread`` works that out for one view, from those passages (so it
costs what they hold, plus one pass over the vertices to find them), and the
walk then knows that reader's strengths too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from hippo.graph.edges import SYNONYM
from hippo.runs import ranges

if TYPE_CHECKING:
    from hippo.graph.projection import GraphProjection


def walkable(projection: GraphProjection, codes: np.ndarray | None, vertices: np.ndarray, owners: np.ndarray,
             columns: dict[str, np.ndarray]) -> np.ndarray:
    """Which of these entries (at ``vertices[owners]``) a reader of spaces ``codes`` (None: every
    space) may walk: a relation or mention read from a live passage of those spaces, a synonym
    between two entities such passages mention."""
    kinds, via = columns["kinds"], columns["via"].astype(np.int64)
    ok = np.zeros(len(owners), dtype=bool)
    read = kinds != SYNONYM
    inside = read & (via >= 0) & (via < projection.vertex_count)
    at = via[inside]
    from_passage = projection.is_passage[at] & projection.live[at]
    if codes is not None:
        from_passage &= np.isin(projection.space_code[at], codes)
    ok[inside] = from_passage
    synonym = ~read
    if synonym.any():
        ends = np.concatenate([vertices[owners[synonym]], columns["targets"][synonym].astype(np.int64)])
        seen = projection.support.counts(codes, ends) > 0
        half = int(synonym.sum())
        ok[synonym] = seen[:half] & seen[half:]
    return ok


def unwalkable(projection: GraphProjection, vertices: np.ndarray) -> np.ndarray:
    """Per vertex, the weight of its entries no reader may walk: 0 when there are none, else its
    strength less the sum of the others, so that ``strength - hidden`` is what a walk sums (the
    entries hold weights at float32; ``strength`` added them at float64)."""
    projection.seal()
    vertices = np.asarray(vertices, dtype=np.int64)
    owners, columns = projection.edges.entries(vertices)
    ok = walkable(projection, None, vertices, owners, columns)
    some = np.bincount(owners[~ok], minlength=len(vertices)) > 0
    sums = np.bincount(owners[ok], weights=columns["weights"][ok].astype(np.float64), minlength=len(vertices))
    return np.where(some, projection.strength[vertices] - sums, 0.0)


def unread(projection: GraphProjection, codes: np.ndarray, most: int) -> tuple[np.ndarray, np.ndarray] | None:
    """What a reader of spaces ``codes`` may not walk beyond ``hidden``: (sorted vertices, the weight
    of their entries hidden from this reader and walkable by some other), or None when the spaces
    it may not read hold more than ``most`` live passages (the walk then reads strengths as it goes).

    Those are the entries of the other spaces' live passages, and the synonyms of entities only
    those passages mention: found from the other spaces' passages, so this costs what they hold."""
    support = projection.support
    present = support.spaces_with_passages()
    others = present[~np.isin(present, codes)]
    if not len(others):
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    if int(support.passages[others].sum()) > most:
        return None
    projection.seal()
    passages = np.flatnonzero(projection.is_passage.values & projection.live.values
                              & np.isin(projection.space_code.values, others))
    touched = touched_by(projection, passages)
    entities = touched[~projection.is_passage[touched]]
    theirs = entities[support.counts(codes, entities) == 0]  # each is mentioned by one of ``passages``
    vertices = np.union1d(touched, with_synonyms(projection, theirs))
    owners, columns = projection.edges.entries(vertices)
    mine = walkable(projection, codes, vertices, owners, columns)
    beyond = walkable(projection, None, vertices, owners, columns) & ~mine
    some = np.bincount(owners[beyond], minlength=len(vertices)) > 0
    sums = np.bincount(owners[mine], weights=columns["weights"][mine].astype(np.float64), minlength=len(vertices))
    extra = projection.strength[vertices] - projection.hidden[vertices] - sums
    return vertices[some], extra[some]


def touched_by(projection: GraphProjection, passages: np.ndarray, mentioned: np.ndarray | None = None) -> np.ndarray:
    """The vertices holding entries read from these passages: the passages, the entities they
    mention (``mentioned``, when the caller has read them already), their facts' subjects and objects."""
    passages = np.asarray(passages, dtype=np.int64)
    if mentioned is None:
        _, mentioned = projection.mentions_of(passages)
    first, count = projection.fact_first[passages], projection.fact_count[passages].astype(np.int64)
    has = first >= 0
    first, count = first[has], count[has]
    rows = ranges(first, count)  # each passage's rows
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
