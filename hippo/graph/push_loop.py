"""The compiled loop of ``hippo.graph.push`` (numba), imported only when a walk first runs.

Functions are module-level so numba's on-disk cache finds them again in the
next process (a closure gets a new identity per process and is compiled every
time). Arguments are plain arrays and fixed-size tuples of arrays, never typed
lists: a tuple's signature is fixed, so the one compiled version is cached.
"""

from __future__ import annotations

import numba
import numpy as np

from hippo.graph.edges import SYNONYM

RUNS = 8  # edge runs the loop reads (``hippo.runs`` keeps O(log n): more are merged first)
DENSE = 4  # dense per-space count arrays it reads (more are summed first)


@numba.njit(cache=True, nogil=True, inline="always")
def _entity_seen(v, dense_counts, sparse_keys, sparse_values):  # noqa: ANN001, ANN202 - numba infers types
    for i in range(DENSE):
        counts = dense_counts[i]
        if v < len(counts) and counts[v] > 0:
            return True
    if len(sparse_keys):
        at = np.searchsorted(sparse_keys, v)
        if at < len(sparse_keys) and sparse_keys[at] == v and sparse_values[at] > 0:
            return True
    return False


@numba.njit(cache=True, nogil=True, inline="always")
def _walkable(u, v, via, kind, is_passage, live, space_code, readable, dense_counts, sparse_keys,  # noqa: ANN001, ANN202
              sparse_values):
    if kind == SYNONYM:  # both entities must be mentioned by a passage the reader sees
        return (_entity_seen(u, dense_counts, sparse_keys, sparse_values)
                and _entity_seen(v, dense_counts, sparse_keys, sparse_values))
    if via < 0 or via >= len(is_passage) or not is_passage[via] or not live[via]:
        return False
    code = space_code[via]
    return 0 <= code < len(readable) and readable[code]


@numba.njit(cache=True, nogil=True)
def _visible_strength(u, indptrs, targets, weights, vias, kinds, is_passage, live, space_code, readable,  # noqa: ANN001, ANN202
                      dense_counts, sparse_keys, sparse_values, visible, known):
    """The summed weight of ``u``'s entries the reader may walk, read once a walk (``known``)."""
    if known[u]:
        return visible[u]
    total = 0.0
    for r in range(RUNS):
        ptr = indptrs[r]
        if u + 1 < len(ptr):
            tg, wt, vi, kd = targets[r], weights[r], vias[r], kinds[r]
            for at in range(ptr[u], ptr[u + 1]):
                if _walkable(u, tg[at], vi[at], kd[at], is_passage, live, space_code, readable,
                             dense_counts, sparse_keys, sparse_values):
                    total += wt[at]
    visible[u] = total
    known[u] = 1
    return total


@numba.njit(cache=True, nogil=True)
def walk(indptrs, targets, weights, vias, kinds, strength, restart_at, restart, damping, epsilon,  # noqa: ANN001, ANN201, C901
         check, is_passage, live, space_code, readable, dense_counts, sparse_keys, sparse_values,
         residual, estimate, flags, queue, touched, visible, known):
    """Sequential forward push from ``restart`` (normalized) at ``restart_at``.

    ``flags`` per vertex: 1 queued, 2 touched; ``queue`` is a ring (a vertex is
    queued at most once at a time). Returns (vertices touched, pushes, entries read);
    the touched vertices are ``touched[:count]``, their scores in ``estimate``.
    A vertex is pushed once its residual reaches ``epsilon`` times its strength:
    with nothing hidden (``check`` False) the projection's, else the sum of the
    entries this reader may walk (``visible``, worked out once a walk and marked in
    ``known``), so what a reader cannot see moves none of its scores, not even
    by when a vertex is pushed.
    """
    n = len(queue)
    head = 0
    tail = 0
    queued = 0
    count = 0
    pushes = 0
    edges = 0
    for i in range(len(restart_at)):
        v = restart_at[i]
        residual[v] += restart[i]
        if flags[v] == 0:
            flags[v] = 3
            touched[count] = v
            count += 1
            queue[tail] = v
            tail = (tail + 1) % n
            queued += 1
    while queued > 0:
        u = queue[head]
        head = (head + 1) % n
        queued -= 1
        flags[u] = 2
        mass = residual[u]
        residual[u] = 0.0
        estimate[u] += (1.0 - damping) * mass
        pushes += 1
        total = strength[u]  # with nothing hidden every entry is walkable
        if check:  # else only the reader's entries count
            total = _visible_strength(u, indptrs, targets, weights, vias, kinds, is_passage, live, space_code,
                                      readable, dense_counts, sparse_keys, sparse_values, visible, known)
        if total > 0.0:
            share = damping * mass / total
            for r in range(RUNS):
                ptr = indptrs[r]
                if u + 1 >= len(ptr):
                    continue
                tg, wt, vi, kd = targets[r], weights[r], vias[r], kinds[r]
                edges += ptr[u + 1] - ptr[u]
                for at in range(ptr[u], ptr[u + 1]):
                    v = tg[at]
                    if check and not _walkable(u, v, vi[at], kd[at], is_passage, live, space_code, readable,
                                               dense_counts, sparse_keys, sparse_values):
                        continue
                    residual[v] += share * wt[at]
                    if flags[v] == 0:
                        flags[v] = 2
                        touched[count] = v
                        count += 1
                    # written out here and below: as a helper function (even inlined) this check
                    # doubled the walk's time at 100k passages (35 -> 80 ms a recall)
                    if flags[v] == 2 and residual[v] >= epsilon:
                        sv = strength[v]
                        if check:
                            sv = _visible_strength(v, indptrs, targets, weights, vias, kinds, is_passage, live,
                                                   space_code, readable, dense_counts, sparse_keys, sparse_values,
                                                   visible, known)
                        if residual[v] < epsilon * max(sv, 1.0):
                            continue
                        flags[v] = 3
                        queue[tail] = v
                        tail = (tail + 1) % n
                        queued += 1
        else:  # no walkable edge: that mass restarts
            for i in range(len(restart_at)):
                v = restart_at[i]
                residual[v] += damping * mass * restart[i]
                if flags[v] == 2 and residual[v] >= epsilon:
                    sv = strength[v]
                    if check:
                        sv = _visible_strength(v, indptrs, targets, weights, vias, kinds, is_passage, live,
                                               space_code, readable, dense_counts, sparse_keys, sparse_values,
                                               visible, known)
                    if residual[v] < epsilon * max(sv, 1.0):
                        continue
                    flags[v] = 3
                    queue[tail] = v
                    tail = (tail + 1) % n
                    queued += 1
    return count, pushes, edges
