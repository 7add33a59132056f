"""Forward push over the projection's own edge runs, compiled: the in-process walk.

``hippo.graph.ppr.push_pagerank`` reads a graph one frontier wave at a time
through ``Adjacency``, so a database can serve it (one query per wave); in
process every wave is a dozen numpy calls over a few thousand entries, and a
recall on HippoRAG's 2Wiki corpus spent ~18 ms a walk on that bookkeeping.
Here the same walk runs as one compiled loop (numba, ``hippo.graph.push_loop``;
``hippo.graph.push_open`` for a reader of everything) over the CSR runs
(``hippo.runs``), vertex by vertex from a FIFO queue: the sequential push of
Andersen, Chung & Lang. Its answer differs from the wave push's only within
their shared bound (each score short of the exact one by less than
``epsilon`` times a strength), and its work is bounded the same way, by the
residual threshold and not by the graph.

Visibility is decided inside the loop, per entry read, from arrays the
projection keeps current: a passage by its live flag and its space's code, an
entity by the per-space mention counts (``hippo.graph.support``). Nothing is
masked ahead of a walk, and a walk reads nothing past what it reaches. For a
reader that does not see everything, when a vertex is pushed also depends on
what it sees only: its strength is the sum of its walkable entries (worked out
once a walk, for the vertices the walk reaches), not the projection's, which
counts hidden and forgotten passages' edges too. It is read only when the
residual lies between two bounds that need no reading (an entity's visible
passages, its strength over every entry), and a pushed vertex's walkable
entries are read once, then walked: on 2Wiki (all of it readable, so every
entry checked) a walk took 30 ms instead of 85, with the same pushes and scores.
A reader of every space needs none of that: what it walks at a vertex is all
but what no one may (``hippo.graph.hidden``, kept by the writes), so it reads
entry by entry only at the few vertices a forget touched, and one forgotten
memory no longer slows every later recall (2Wiki: a walk 5 ms, as with
nothing hidden, against 34).

The loop releases the GIL, so a server's request threads walk at once. numba
caches the compiled loop on disk (beside the module, else under the user's
cache folder): only the first walk after an install compiles (~5 s).
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from hippo.graph.edges import EdgeRuns
from hippo.graph.ppr import SparseScores, Workspace

if TYPE_CHECKING:
    from hippo.graph.view import GraphView

RUNS = 8  # as ``hippo.graph.push_loop.RUNS`` (not imported here: that module imports numba)
DENSE = 4
_NO_INDPTR = np.zeros(1, dtype=np.int64)  # an empty run: no vertex has entries in it
_EMPTY = {np.dtype(t): np.zeros(0, dtype=t) for t in (np.int32, np.float32, np.int8, np.int64)}

Arrays = tuple[np.ndarray, ...]


@dataclass(frozen=True)
class Visibility:
    """What a reader may walk, as the arrays the compiled loop reads (``check`` False: everything)."""

    check: bool
    is_passage: np.ndarray  # bool per vertex
    live: np.ndarray  # bool per vertex
    space_code: np.ndarray  # int32 per vertex (-1: an entity)
    readable: np.ndarray  # bool per space code
    dense_counts: Arrays  # DENSE int32 arrays: live passages of large readable spaces mentioning a vertex
    sparse_keys: np.ndarray  # sorted entity vertices of the small readable spaces ...
    sparse_values: np.ndarray  # ... and their summed counts
    mention_weight: float  # each visible passage's mention of an entity weighs this in its strength
    hidden: np.ndarray  # float64 per vertex: the strength of entries no reader may walk
    exact: bool  # the walkable strength is ``strength - hidden - unread`` (else read in the walk)
    unread_at: np.ndarray  # sorted vertices with entries only other readers may walk ...
    unread: np.ndarray  # ... and those entries' weight (``hippo.graph.hidden.unread``)

    @classmethod
    def of(cls, view: GraphView) -> Visibility:
        p = view.projection
        readable = np.zeros(len(p.space_names) + 1, dtype=bool)
        if view.codes is None:
            readable[:] = True
        else:
            readable[view.codes[view.codes < len(readable)]] = True
        dense, pairs = p.support.count_arrays(view.codes)
        if len(dense) > DENSE:  # rare (many large readable spaces): fold the rest into one, once per view
            rest = dense[DENSE - 1 :]
            folded = np.zeros(max(len(d) for d in rest), dtype=np.int32)
            for d in rest:
                folded[: len(d)] += d
            dense = [*dense[: DENSE - 1], folded]
        dense = [np.ascontiguousarray(d, dtype=np.int32) for d in dense]
        dense += [_EMPTY[np.dtype(np.int32)]] * (DENSE - len(dense))
        keys = np.concatenate([k for k, _ in pairs]) if pairs else _EMPTY[np.dtype(np.int64)]
        values = np.concatenate([v for _, v in pairs]) if pairs else _EMPTY[np.dtype(np.int64)]
        if len(pairs) > 1:  # one sorted pair: a vertex's counts in several small spaces add up
            keys, at = np.unique(keys, return_inverse=True)
            values = np.bincount(at, weights=values, minlength=len(keys)).astype(np.int64)
        unread = view.unread
        at, weight = unread if unread is not None else (_EMPTY[np.dtype(np.int64)], np.zeros(0))
        return cls(check=not view.everything, is_passage=p.is_passage.values, live=p.live.values,
                   space_code=p.space_code.values, readable=readable, dense_counts=tuple(dense),
                   sparse_keys=np.ascontiguousarray(keys, dtype=np.int64),
                   sparse_values=np.ascontiguousarray(values, dtype=np.int64),
                   mention_weight=float(p.mention_weight), hidden=p.hidden.values, exact=unread is not None,
                   unread_at=np.ascontiguousarray(at, dtype=np.int64), unread=np.ascontiguousarray(weight))


@dataclass(frozen=True)
class RunArrays:
    """The projection's edge runs as the compiled loop takes them: a tuple of ``RUNS`` arrays per
    column, empty runs after the real ones."""

    source: list  # the ``EdgeRuns.runs`` list these came from: a seal or a merge makes a new list
    indptrs: Arrays
    targets: Arrays
    weights: Arrays
    vias: Arrays
    kinds: Arrays


_run_arrays: weakref.WeakKeyDictionary[EdgeRuns, RunArrays] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def run_arrays(edges: EdgeRuns, vertex_count: int) -> RunArrays:
    """``edges``' sealed runs for the loop, made again only when the runs change."""
    found = _run_arrays.get(edges)
    if found is not None and found.source is edges.runs:
        return found
    if len(edges.runs) > RUNS:  # never seen in practice: runs shrink fourfold each (``hippo.runs``)
        edges.merge_tail(vertex_count, RUNS)
    runs = edges.runs
    pad = RUNS - len(runs)

    def column(name: str, dtype: type) -> Arrays:
        arrays = [np.ascontiguousarray(run.columns[name], dtype=dtype) for run in runs]
        return tuple(arrays + [_EMPTY[np.dtype(dtype)]] * pad)

    made = RunArrays(source=runs, indptrs=tuple([np.ascontiguousarray(r.indptr, dtype=np.int64) for r in runs]
                                                + [_NO_INDPTR] * pad),
                     targets=column("targets", np.int32), weights=column("weights", np.float32),
                     vias=column("via", np.int32), kinds=column("kinds", np.int8))
    with _lock:
        _run_arrays[edges] = made
    return made


def compiled_push(view: GraphView, vertices: np.ndarray, weights: np.ndarray, damping: float, epsilon: float,
                  workspace: Workspace) -> SparseScores:
    """PPR from the sparse reset (``weights`` at ``vertices``, checked by ``ppr.checked_reset``) by
    the compiled sequential push over ``view``'s projection."""
    from hippo.graph.push_loop import walk  # numba: imported on the first walk, not with hippo
    from hippo.graph.push_open import collect, walk_open

    projection = view.projection
    projection.seal()
    n = projection.vertex_count
    runs = run_arrays(projection.edges, n)
    keep = weights > 0
    restart_at = np.ascontiguousarray(vertices[keep], dtype=np.int64)
    restart = np.ascontiguousarray(weights[keep] / weights.sum(), dtype=np.float64)
    state, estimate = workspace.array("state", np.float64, 2 * n), workspace.array("estimate", np.float64, n)
    queue, touched = workspace.array("queue", np.int32, n), workspace.array("touched", np.int32, n)
    visible, known = workspace.array("visible", np.float64, n), workspace.array("known", np.int8, n)
    v = view.visibility
    if not v.check and len(runs.source) == 1:
        count, pushes, edges = walk_open(runs.indptrs[0], runs.targets[0], runs.weights[0], projection.strength.values,
                                         restart_at, restart, float(damping), float(epsilon), state, estimate,
                                         queue[:n], touched)
    else:
        count, pushes, edges = walk(
            runs.indptrs, runs.targets, runs.weights, runs.vias, runs.kinds, projection.strength.values,
            restart_at, restart, float(damping), float(epsilon), v.check, v.is_passage, v.live, v.space_code,
            v.readable, v.dense_counts, v.sparse_keys, v.sparse_values, v.mention_weight, v.hidden, v.exact,
            v.unread_at, v.unread, state, estimate, queue[:n], touched, visible, known)
    # only the vertices it pushed have a score, and only they are ordered: a first walk touches ~10x
    # more (100k passages: 44k touched, 4.5k pushed; ordered and read out after the walk 0.88 ms, these
    # 0.53; 2Wiki 0.57 against 0.41)
    pushed, scores = workspace.array("pushed", np.int32, n), workspace.array("scores", np.float64, n)
    found = collect(touched[:count], state, estimate, known, pushed, scores)
    vertices, scores = in_order(pushed[:found], scores[:found], n, workspace)
    return SparseScores(vertices=vertices, scores=scores, pushes=int(pushes), edges=int(edges))


def in_order(vertices: np.ndarray, scores: np.ndarray, n: int, workspace: Workspace) -> tuple[np.ndarray, np.ndarray]:
    """Distinct ``vertices`` (of ``0 .. n - 1``) in increasing order, as int64, and their ``scores``
    in that order (copies). While they are not far fewer than ``n``, marked in a scratch array and
    read back (``np.flatnonzero``): on 2Wiki a first walk pushes ~10k of 67k vertices, and their sort
    took longer. Past that a sort, whose cost stays with what the walk reached, not with the graph."""
    if n > 16 * len(vertices):
        order = np.argsort(vertices)  # numpy's sort: numba's, in the compiled pass, was 2x slower
        return vertices[order].astype(np.int64), scores[order]
    mark, dense = workspace.array("in_order", bool, n), workspace.array("in_order.scores", np.float64, n)
    mark[vertices] = True
    dense[vertices] = scores  # read back only where marked now: never cleared
    ordered = np.flatnonzero(mark[:n])
    mark[ordered] = False
    return ordered, dense[ordered]
