"""Personalized PageRank by the Graph Data Science library, where a server has it installed
(``NEO4J_GDS=1 scripts/neo4j start``), as an alternative to hippo's local push.

GDS walks an in-memory projection it keeps in the server's heap: ``project`` builds it from
what a set of spaces sees (``hippo/cypher/gds_project.cypher``, weighted as the push weighs
the graph), ``pagerank`` runs one personalized PageRank from a set of source nodes on it
(equal weights: GDS 2.13 refuses weighted ``sourceNodes``) and returns the top passages.
Unlike the push, whose work is bounded by its threshold, each GDS call iterates over the
whole projection, and the projection is a snapshot: a write is not in it until it is
projected again, and a projection is of one set of spaces, so a reader must only be served
from a projection of exactly the spaces it may read.
``benchmarks/gds_ppr.py`` measures it against the push on the same resets.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from hippo.errors import StoreError
from hippo.store.neo4j.connection import Connection

INSTALL = "start the server with NEO4J_GDS=1 scripts/neo4j start (or install the GDS 2.13 plugin)"


@dataclass(frozen=True)
class Projection:
    """A GDS in-memory graph: its name, size and how long projecting it took."""

    name: str
    nodes: int
    relationships: int
    seconds: float


def version(db: Connection) -> str | None:
    """The GDS version the server has, or None where it has none."""
    try:
        [row] = db.read("gds_version", "asking for the GDS version")
    except StoreError as exc:
        if "gds.version" in str(exc) or "Unknown function" in str(exc):
            return None
        raise
    return str(row["version"])


def require(db: Connection) -> str:
    found = version(db)
    if found is None:
        raise StoreError(f"Neo4j at {db.url} has no Graph Data Science library; {INSTALL}")
    return found


def project(db: Connection, name: str, *, spaces: Sequence[str] | None = None, relation_weight: float = 1.0,
            mention_weight: float = 1.0) -> Projection:
    """Project what ``spaces`` (None: all) see as the GDS graph ``name``, replacing one of that name."""
    require(db)
    drop(db, name)
    clock = time.perf_counter()
    [row] = db.read("gds_project", f"projecting the graph {name!r} for GDS", graph=name,
                    spaces=list(spaces) if spaces is not None else None, relation_weight=float(relation_weight),
                    mention_weight=float(mention_weight))
    return Projection(name=name, nodes=int(row["nodes"]), relationships=int(row["relationships"]),
                      seconds=time.perf_counter() - clock)


def pagerank(db: Connection, name: str, sources: Sequence[str], *, damping: float, top: int,
             iterations: int = 40, tolerance: float = 1e-7) -> list[tuple[str, float]]:
    """The ``top`` passages by personalized PageRank from ``sources`` (passage or entity ids), each
    an equal share of the reset: GDS 2.13 takes no weights with its source nodes. A weighted reset
    is a sum of such walks (PPR is linear in the reset), one call per group of equal weight."""
    [row] = db.read("gds_pagerank", "running personalized PageRank in GDS", graph=name, sources=list(sources),
                    damping=float(damping), top=int(top), iterations=int(iterations), tolerance=float(tolerance))
    return [(str(rid), float(score)) for rid, score in row["passages"]]


def drop(db: Connection, name: str) -> None:
    db.read("gds_drop", f"dropping the GDS graph {name!r}", graph=name)
