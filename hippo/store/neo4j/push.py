"""``hippo.push``: store-side recall's walk in one call, where the server has hippo's procedure.

Without it a store-side recall walks by frontier waves: the local push runs in the client and
reads each wave's edges in one round trip (``read_neighbours.cypher``), ~8 reads in a chain at
100k passages. ``scripts/neo4j-plugin`` is the same push as a Neo4j procedure (Java, the server's
public API only), built and installed by ``scripts/neo4j start``: it reads the same edges with the
same weights and visibility inside the database and pushes them in the same waves (every vertex over
its threshold at once, so the order the store keeps edges in, which hidden writes move, changes
nothing), so its scores differ from the client's waves only within the push's bound.
It is opt-in (``neo4j_read_push = "server"``, env ``HIPPO_NEO4J_READ_PUSH``; Aura installs no plugin): it
takes the walk's work off the client, whose CPU a store-side recall spent most of, and onto the
database, which every hippo process shares; at 100k passages on this 2-core machine, where both
share the cores, it cost more Neo4j CPU than it saved the client (README, "Store-side reads").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from hippo.errors import StoreError
from hippo.store.neo4j.connection import Connection

VERSION = "hippo.push 1"  # what the procedure's description starts with (Push.VERSION)
INSTALL = ("start the server with scripts/neo4j start (it builds hippo.push from scripts/neo4j-plugin with the "
           "JDK's javac), or put that jar in the server's plugins/ folder")
MAX_PUSHES = 10_000_000  # a safety net: with damping < 1 the residual shrinks every push


def installed(db: Connection) -> bool:
    """The server has this version of ``hippo.push``."""
    rows = db.read("push_installed", "looking for hippo.push")
    return any(str(r["description"]).startswith(VERSION + ":") for r in rows)


@dataclass(frozen=True)
class Pushed:
    """What one ``hippo.push`` call walked: the nodes it pushed, by node id and record id."""

    nodes: np.ndarray  # int64 node ids
    ids: list[str]  # record ids
    passage: np.ndarray  # bool
    scores: np.ndarray  # float64, each node's PPR estimate
    pushes: int
    edges: int

    @classmethod
    def of(cls, row: dict) -> Pushed:
        if row["version"] != VERSION:
            raise StoreError(f"the server's hippo.push is {row['version']!r}, this hippo needs {VERSION!r}: {INSTALL}")
        if not row["complete"]:
            raise StoreError(f"hippo.push stopped after {MAX_PUSHES:,} pushes without converging")
        ids: Sequence[str] = row["ids"]
        n = len(ids)
        nodes = np.fromiter(row["nodes"], dtype=np.int64, count=len(row["nodes"]))
        passage = np.fromiter(row["passages"], dtype=bool, count=len(row["passages"]))
        scores = np.fromiter(row["scores"], dtype=np.float64, count=len(row["scores"]))
        if not (len(nodes) == len(passage) == len(scores) == n):
            raise StoreError("hippo.push answered lists of different lengths")
        return cls(nodes=nodes, ids=list(ids), passage=passage, scores=scores, pushes=int(row["pushes"]),
                   edges=int(row["edges"]))
