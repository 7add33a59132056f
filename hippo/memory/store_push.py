"""A store-side recall's PPR walked inside the server (``hippo.store.neo4j.push``), as a ``SparseScores``
over the recall's handles."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from hippo.graph.ppr import SparseScores, checked_reset

if TYPE_CHECKING:
    from hippo.memory.store_source import StoreSource


def server_pagerank(source: StoreSource, nodes: np.ndarray, weights: np.ndarray, damping: float,
                    epsilon: float) -> SparseScores:
    """PPR from the reset ``weights`` at ``nodes`` (handles) by one ``hippo.push`` call: the walk the
    frontier waves would take (same edges, weights, visibility and threshold), pushed in the
    in-process order. The pushed nodes get handles; nothing else the walk met does."""
    table = source.table
    vertices, weights = checked_reset(nodes, weights, table.capacity)
    keep = weights > 0
    vertices, weights = vertices[keep], weights[keep]
    seeds = zip(source.record_ids(vertices.tolist()), table.passage[vertices].tolist(), weights.tolist(), strict=True)
    walked = source.reader.push(list(seeds), damping, epsilon, everything=source.sees_everything,
                                mention_weight=source.mention_weight, relation_weight=source.relation_weight,
                                cache_nodes=source.cache.capacity if source.cache is not None else 0)
    ids = np.array(walked.ids, dtype=object)
    handles = np.empty(len(ids), dtype=np.int64)
    for passage in (True, False):
        at = walked.passage == passage
        handles[at] = table.handles(ids[at].tolist(), passage)
    order = np.argsort(handles, kind="stable")
    return SparseScores(vertices=handles[order], scores=walked.scores[order], pushes=walked.pushes,
                        edges=walked.edges)
