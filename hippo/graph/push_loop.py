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
from hippo.graph.prefetch import prefetch

RUNS = 8  # edge runs the loop reads (``hippo.runs`` keeps O(log n): more are merged first)
DENSE = 4  # dense per-space count arrays it reads (more are summed first)
AHEAD = 8  # edges between asking for a target's state and reading it (4 and 16 were slower: ``walk_open``)


@numba.njit(cache=True, nogil=True)
def _seen_count(v, dense_counts, sparse_keys, sparse_values):  # noqa: ANN001, ANN202 - numba infers types
    """How many live passages of the reader's spaces mention entity ``v`` (0: the reader does not see it)."""
    c0, c1, c2, c3 = dense_counts  # DENSE of them
    total = 0
    if v < len(c0):
        total += c0[v]
    if v < len(c1):
        total += c1[v]
    if v < len(c2):
        total += c2[v]
    if v < len(c3):
        total += c3[v]
    if len(sparse_keys):
        at = np.searchsorted(sparse_keys, v)
        if at < len(sparse_keys) and sparse_keys[at] == v:
            total += sparse_values[at]
    return total


@numba.njit(cache=True, nogil=True)
def _sparse_seen(v, sparse_keys, sparse_values):  # noqa: ANN001, ANN202
    at = np.searchsorted(sparse_keys, v)
    return at < len(sparse_keys) and sparse_keys[at] == v and sparse_values[at] > 0


@numba.njit(cache=True, nogil=True)
def _walkable_entries(u, indptrs, targets, weights, vias, kinds, is_passage, live, space_code, readable,  # noqa: ANN001, ANN202, C901
                      dense_counts, sparse_keys, sparse_values, kept_targets, kept_weights, keep):
    """The entries of ``u`` the reader may walk: (how many, their summed weight), and with ``keep``
    their targets and weights in ``kept_targets`` / ``kept_weights`` (long enough for every entry).

    An entry is walkable when the passage it was read from is visible (live, in a readable space),
    a synonym when the reader sees both its entities. The test is written out in the loop: called
    per entry, even inlined, a helper costs numba a reference count per array argument (measured:
    20-30 ns an entry against 3)."""
    c0, c1, c2, c3 = dense_counts
    u_seen = not is_passage[u] and _seen_count(u, dense_counts, sparse_keys, sparse_values) > 0
    small = len(sparse_keys) > 0
    passages, spaces = len(is_passage), len(readable)
    count = 0
    total = 0.0
    for r in range(RUNS):
        ptr = indptrs[r]
        if u + 1 >= len(ptr):
            continue
        tg, wt, vi, kd = targets[r], weights[r], vias[r], kinds[r]
        for at in range(ptr[u], ptr[u + 1]):
            v = tg[at]
            if kd[at] == SYNONYM:
                if not u_seen:
                    continue
                if not ((v < len(c0) and c0[v] > 0) or (v < len(c1) and c1[v] > 0) or (v < len(c2) and c2[v] > 0)
                        or (v < len(c3) and c3[v] > 0) or (small and _sparse_seen(v, sparse_keys, sparse_values))):
                    continue
            else:
                via = vi[at]
                if via < 0 or via >= passages or not is_passage[via] or not live[via]:
                    continue
                code = space_code[via]
                if code < 0 or code >= spaces or not readable[code]:
                    continue
            if keep:
                kept_targets[count] = v
                kept_weights[count] = wt[at]
            count += 1
            total += wt[at]
    return count, total


@numba.njit(cache=True, nogil=True)
def _open_strength(v, strength, hidden):  # noqa: ANN001, ANN202
    """``v``'s strength over every entry some reader may walk: exact for a reader of every space,
    an upper bound for any other."""
    if v < len(hidden):
        return strength[v] - hidden[v]
    return strength[v]


@numba.njit(cache=True, nogil=True)
def _unread_weight(v, unread_at, unread):  # noqa: ANN001, ANN202
    """The weight of ``v``'s entries only other readers may walk (0: none)."""
    if len(unread_at):
        at = np.searchsorted(unread_at, v)
        if at < len(unread_at) and unread_at[at] == v:
            return unread[at]
    return 0.0


@numba.njit(cache=True, nogil=True)
def _plain(v, hidden, unread_at):  # noqa: ANN001, ANN202
    """Whether a reader whose strengths are ``exact`` may walk every entry of ``v``. (The lookup of
    ``_unread_weight`` written out: calling it from here cost ~1.5 ms a 2Wiki walk, 6.9 against 5.3.)"""
    if v >= len(hidden) or hidden[v] != 0.0:
        return False
    if len(unread_at):
        at = np.searchsorted(unread_at, v)
        return not (at < len(unread_at) and unread_at[at] == v)
    return True


@numba.njit(cache=True, nogil=True)
def _first_threshold(v, epsilon, strength, mention_weight, is_passage, live, space_code, readable,  # noqa: ANN001, ANN202
                     dense_counts, sparse_keys, sparse_values, hidden, exact, unread_at, unread, visible, known):
    """For a reader who does not see everything: a lower bound of the residual at which a vertex the
    walk has just touched is pushed (epsilon times its strength over the entries the reader may walk,
    at least 1), made exact only if the residual reaches it. An entity: where the view knows what its
    reader may not walk (``exact``), its strength less that; else one mention per visible passage
    of it (a hub is then rarely read in full). A visible passage: its strength, exact, since each of
    its entries is a mention read from it. (No strength is ``known`` before its vertex is touched:
    ``known`` is cleared after every walk.)"""
    if is_passage[v]:
        code = space_code[v]
        if not live[v] or code < 0 or code >= len(readable) or not readable[code]:
            return epsilon  # a restart the reader cannot walk from: its strength is read if pushed
        visible[v] = strength[v]
        known[v] = 1
        return epsilon * max(strength[v], 1.0)
    if exact:
        visible[v] = _open_strength(v, strength, hidden) - _unread_weight(v, unread_at, unread)
        known[v] = 1
        return epsilon * max(visible[v], 1.0)
    return epsilon * max(mention_weight * _seen_count(v, dense_counts, sparse_keys, sparse_values), 1.0)


@numba.njit(cache=True, nogil=True)
def walk(indptrs, targets, weights, vias, kinds, strength, restart_at, restart, damping, epsilon,  # noqa: ANN001, ANN201, C901
         check, is_passage, live, space_code, readable, dense_counts, sparse_keys, sparse_values, mention_weight,
         hidden, exact, unread_at, unread, state, estimate, queue, touched, visible, known):
    """Sequential forward push from ``restart`` (normalized) at ``restart_at``.

    ``state`` holds, per vertex ``v``, its residual at ``2 v`` and its push
    threshold at ``2 v + 1``: 0 while the walk has not touched it, negative
    while it is queued (side by side: one cache line an entry). ``queue`` is a
    ring (a vertex is queued at most once at a time). Returns (vertices touched,
    pushes, entries read); the touched vertices are ``touched[:count]``, their
    scores in ``estimate``.
    A vertex is pushed once its residual reaches ``epsilon`` times its strength:
    with nothing hidden (``check`` False) the projection's, else the sum of the
    entries this reader may walk (``visible``, worked out once a walk and marked in
    ``known``), so what a reader cannot see moves none of its scores, not even
    by when a vertex is pushed: that schedule is the one a store holding only
    what the reader sees would give.
    """
    n = len(queue)
    head = 0
    tail = 0
    queued = 0
    count = 0
    pushes = 0
    edges = 0
    kept_targets = np.empty(1024, dtype=np.int32)  # a pushed vertex's walkable entries (``check``)
    kept_weights = np.empty(1024, dtype=np.float32)
    no_targets, no_weights = np.empty(0, dtype=np.int32), np.empty(0, dtype=np.float32)  # a strength is only summed
    for i in range(len(restart_at)):
        v = restart_at[i]
        state[2 * v] += restart[i]
        if state[2 * v + 1] == 0.0:
            threshold = epsilon * max(strength[v], 1.0)
            if check and not (exact and _plain(v, hidden, unread_at)):
                threshold = _first_threshold(v, epsilon, strength, mention_weight, is_passage, live, space_code,
                                             readable, dense_counts, sparse_keys, sparse_values, hidden, exact,
                                             unread_at, unread, visible, known)
            state[2 * v + 1] = -threshold
            touched[count] = v
            count += 1
            queue[tail] = v
            tail = tail + 1 if tail + 1 < n else 0
            queued += 1
    first_indptr, first_targets, first_weights = indptrs[0], targets[0], weights[0]  # the oldest run, the largest
    while queued > 0:
        u = queue[head]
        head = head + 1 if head + 1 < n else 0
        queued -= 1
        after = queue[head]  # what it reads next asked for ahead, as in ``walk_open`` (in the largest run)
        if queued > 0 and after < len(first_indptr):
            prefetch(first_targets, first_indptr[after])
            prefetch(first_weights, first_indptr[after])
        if queued > 1:
            later = queue[head + 1 if head + 1 < n else 0]
            prefetch(first_indptr, later)
            prefetch(strength, later)
            prefetch(state, 2 * later)
        state[2 * u + 1] = -state[2 * u + 1]
        mass = state[2 * u]
        state[2 * u] = 0.0
        estimate[u] += (1.0 - damping) * mass
        pushes += 1
        total = strength[u]  # with nothing hidden every entry is walkable
        runs, degree, walkable, kept = RUNS, 0, 0, False
        # else only the reader's entries count, read into ``kept_*`` and walked from there; where the
        # view knows what its reader may not walk, only at a vertex holding such an entry
        if check and not (exact and _plain(u, hidden, unread_at)):
            for r in range(RUNS):
                ptr = indptrs[r]
                if u + 1 < len(ptr):
                    degree += ptr[u + 1] - ptr[u]
            if degree > len(kept_targets):
                kept_targets = np.empty(2 * degree, dtype=np.int32)
                kept_weights = np.empty(2 * degree, dtype=np.float32)
            walkable, total = _walkable_entries(u, indptrs, targets, weights, vias, kinds, is_passage, live,
                                                space_code, readable, dense_counts, sparse_keys, sparse_values,
                                                kept_targets, kept_weights, True)
            visible[u] = total
            known[u] = 1
            state[2 * u + 1] = epsilon * max(total, 1.0)  # exact from here on
            runs, kept = 1, True
        if total > 0.0:
            share = damping * mass / total
            for r in range(runs):
                if kept:
                    tg, wt, first, last = kept_targets, kept_weights, 0, walkable
                    edges += degree
                else:
                    ptr = indptrs[r]
                    if u + 1 >= len(ptr):
                        continue
                    tg, wt, first, last = targets[r], weights[r], ptr[u], ptr[u + 1]
                    edges += last - first
                for at in range(first, last):
                    if at + AHEAD < last:
                        prefetch(state, 2 * tg[at + AHEAD])
                    v = tg[at]
                    residual = state[2 * v] + share * wt[at]
                    state[2 * v] = residual
                    threshold = state[2 * v + 1]
                    if threshold == 0.0:
                        threshold = epsilon * max(strength[v], 1.0)
                        if check and not (exact and _plain(v, hidden, unread_at)):
                            threshold = _first_threshold(v, epsilon, strength, mention_weight, is_passage, live,
                                                         space_code, readable, dense_counts, sparse_keys,
                                                         sparse_values, hidden, exact, unread_at, unread,
                                                         visible, known)
                        state[2 * v + 1] = threshold
                        touched[count] = v
                        count += 1
                    # written out here and below: as a helper function (even inlined) this check
                    # doubled the walk's time at 100k passages (35 -> 80 ms a recall)
                    if 0.0 < threshold <= residual:
                        # below the strength over every entry some reader may walk, whether it is pushed
                        # depends on the entries this one may; at or above it, it is pushed either way
                        if (check and not exact and not known[v]
                                and residual < epsilon * max(_open_strength(v, strength, hidden), 1.0)):
                            threshold = state[2 * v + 1] = epsilon * max(_read_strength(
                                v, indptrs, targets, weights, vias, kinds, is_passage, live, space_code, readable,
                                dense_counts, sparse_keys, sparse_values, visible, known, no_targets, no_weights), 1.0)
                            if residual < threshold:
                                continue
                        state[2 * v + 1] = -threshold
                        queue[tail] = v
                        tail = tail + 1 if tail + 1 < n else 0
                        queued += 1
        else:  # no walkable edge: that mass restarts
            for i in range(len(restart_at)):
                v = restart_at[i]
                residual = state[2 * v] + damping * mass * restart[i]
                state[2 * v] = residual
                threshold = state[2 * v + 1]
                if 0.0 < threshold <= residual:
                    if (check and not exact and not known[v]
                            and residual < epsilon * max(_open_strength(v, strength, hidden), 1.0)):
                        threshold = state[2 * v + 1] = epsilon * max(_read_strength(
                            v, indptrs, targets, weights, vias, kinds, is_passage, live, space_code, readable,
                            dense_counts, sparse_keys, sparse_values, visible, known, no_targets, no_weights), 1.0)
                        if residual < threshold:
                            continue
                    state[2 * v + 1] = -threshold
                    queue[tail] = v
                    tail = tail + 1 if tail + 1 < n else 0
                    queued += 1
    return count, pushes, edges


@numba.njit(cache=True, nogil=True)
def _read_strength(v, indptrs, targets, weights, vias, kinds, is_passage, live, space_code, readable,  # noqa: ANN001, ANN202
                   dense_counts, sparse_keys, sparse_values, visible, known, no_targets, no_weights):
    """``v``'s strength over the entries the reader may walk, read once a walk (``known``)."""
    _, total = _walkable_entries(v, indptrs, targets, weights, vias, kinds, is_passage, live, space_code, readable,
                                 dense_counts, sparse_keys, sparse_values, no_targets, no_weights, False)
    visible[v] = total
    known[v] = 1
    return total
