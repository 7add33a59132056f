"""The projection's adjacency: every edge in both directions, in sorted runs (``hippo.runs``).

An edge ``a - b`` is an entry at ``a`` (target ``b``) and one at ``b``, each
with its weight, the passage it was read from (``via``; none for a synonym)
and its kind. Mentions are added sorted by passage vertex and passages get
increasing vertex ids, so an entity's mention entries run from its first
passage to its last.
"""

from __future__ import annotations

import numpy as np

from hippo.runs import Run, SortedRuns

RELATION, MENTION, SYNONYM = 0, 1, 2
KIND_NAMES = ("relation", "mention", "synonym")
NO_PASSAGE = -1
COLUMNS = {"targets": np.int32, "weights": np.float32, "via": np.int32, "kinds": np.int8}


class EdgeRuns(SortedRuns):
    def __init__(self, runs: list[Run] | None = None) -> None:
        super().__init__(COLUMNS, runs)

    def add_edges(self, a: np.ndarray, b: np.ndarray, weights: np.ndarray, via: np.ndarray,
                  kinds: np.ndarray) -> None:
        """Undirected edges ``a - b``: stored as an entry at each end."""
        self.add(np.concatenate([a, b]), targets=np.concatenate([b, a]), weights=np.concatenate([weights, weights]),
                 via=np.concatenate([via, via]), kinds=np.concatenate([kinds, kinds]))
