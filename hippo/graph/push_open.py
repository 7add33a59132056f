"""The compiled walk of a reader who may walk every entry (``walk_open``), and the pass after any
walk (``collect``): the other half of ``hippo.graph.push_loop``, imported with it on the first walk.
"""

from __future__ import annotations

import numba

from hippo.graph.prefetch import prefetch
from hippo.graph.push_loop import AHEAD


@numba.njit(cache=True, nogil=True)
def walk_open(indptr, targets, weights, strength, restart_at, restart, damping, epsilon, state, estimate,  # noqa: ANN001, ANN201
              queue, touched):
    """``push_loop.walk`` for a reader who may walk every entry, over a projection held in one run (a
    store as opened, read by a reader of every space): the same pushes in the same order, so the same
    scores.

    Its run's arrays are arguments of their own, not entries of the tuples ``walk`` takes: reading
    them from a tuple by the run's index, the same loop took ~1.6 times as long on 2Wiki's walks (a
    probe, 140 walks replayed). A vertex is queued in a branch, as ``walk`` queues it: a branchless
    queue (every entry written to the queue's free slot, the tail moved by whether it crossed) took
    as long over walks replayed in a warm cache but longer where a recall walks, after its searches
    have filled the cache with vectors (replayed after 64 MB were read: 100k passages 5.4 against
    4.5 ms a first walk, 2Wiki 4.4 against 3.9; recalls, interleaved: 100k 18.3 against 16.8 ms).

    What it will read next it asks for ahead (``prefetch``), in two steps down the queue: where the
    next vertex's edges start and its strength and state, one vertex ahead of reading its edges,
    and each target's state ``AHEAD`` edges before its push. Replayed as above: 2Wiki 3.4 against
    2.5 ms a first walk, 100k 4.0 against 2.8; recalls, interleaved: 2Wiki 14.1 against 12.5 ms
    p50, 100k 15.5 against 14.5, 10k 12.9 against 11.7; the same pushes, so the same scores.
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
        state[2 * v] += restart[i]
        if state[2 * v + 1] == 0.0:
            state[2 * v + 1] = -epsilon * max(strength[v], 1.0)
            touched[count] = v
            count += 1
            queue[tail] = v
            tail = tail + 1 if tail + 1 < n else 0
            queued += 1
    while queued > 0:
        u = queue[head]
        head = head + 1 if head + 1 < n else 0
        queued -= 1
        after = queue[head]
        if queued > 0 and after < len(indptr):  # the next vertex's edges: where they start was asked for a push ago
            prefetch(targets, indptr[after])
            prefetch(weights, indptr[after])
        if queued > 1:
            later = queue[head + 1 if head + 1 < n else 0]
            prefetch(indptr, later)
            prefetch(strength, later)
            prefetch(state, 2 * later)
        state[2 * u + 1] = -state[2 * u + 1]
        mass = state[2 * u]
        state[2 * u] = 0.0
        estimate[u] += (1.0 - damping) * mass
        pushes += 1
        total = strength[u]
        if total <= 0.0:  # no edge: that mass restarts
            for i in range(len(restart_at)):
                v = restart_at[i]
                residual = state[2 * v] + damping * mass * restart[i]
                state[2 * v] = residual
                threshold = state[2 * v + 1]
                if 0.0 < threshold <= residual:
                    state[2 * v + 1] = -threshold
                    queue[tail] = v
                    tail = tail + 1 if tail + 1 < n else 0
                    queued += 1
            continue
        share = damping * mass / total
        first, last = indptr[u], indptr[u + 1]
        edges += last - first
        for at in range(first, last):
            if at + AHEAD < last:
                prefetch(state, 2 * targets[at + AHEAD])
            v = targets[at]
            residual = state[2 * v] + share * weights[at]
            state[2 * v] = residual
            threshold = state[2 * v + 1]
            if threshold == 0.0:
                threshold = epsilon * max(strength[v], 1.0)
                state[2 * v + 1] = threshold
                touched[count] = v
                count += 1
            if 0.0 < threshold <= residual:
                state[2 * v + 1] = -threshold
                queue[tail] = v
                tail = tail + 1 if tail + 1 < n else 0
                queued += 1
    return count, pushes, edges


@numba.njit(cache=True, nogil=True)
def collect(touched, state, estimate, known, vertices, scores):  # noqa: ANN001, ANN201
    """The vertices a walk pushed (a positive estimate; of those it ``touched``, in the order
    touched) and their scores, written to ``vertices`` and ``scores``; what the walk wrote about
    every touched vertex is cleared in the same pass, so the scratch is clean for the next walk.
    Returns how many were pushed."""
    found = 0
    for i in range(len(touched)):
        if i + AHEAD < len(touched):  # touched in the walk's order, scattered: asked for ahead
            ahead = touched[i + AHEAD]
            prefetch(estimate, ahead)
            prefetch(state, 2 * ahead)
        v = touched[i]
        score = estimate[v]
        if score > 0.0:
            vertices[found] = v
            scores[found] = score
            found += 1
        estimate[v] = 0.0
        state[2 * v] = 0.0
        state[2 * v + 1] = 0.0
        known[v] = 0
    return found
