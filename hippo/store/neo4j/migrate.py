"""Upgrades of a Neo4j store written by an older hippo, run on open.

Schema 1 -> 2 moves the vectors off the records people browse: version 1 kept
a float list ``embedding`` on every Passage, Entity and RELATES (and the
vector indexes on those labels); version 2 keeps it on the (:Vector) nodes
only, labelled by the kinds of record that use them
(``hippo/cypher/schema_vector_indexes.cypher`` describes the layout). Every step is
idempotent and the schema version moves last, so a migration cut short is
finished by the next open.
"""

from __future__ import annotations

import numpy as np

from hippo.store.cypher import cypher_statements
from hippo.store.neo4j.connection import Connection
from hippo.store.neo4j.schema import META, SCHEMA_VERSION, await_indexes, ensure_vector_indexes
from hippo.store.neo4j.vectors import VECTOR_DTYPE, vector_list

_PAGE = 1000


def migrate_vectors(db: Connection, dim: int | None) -> None:
    """Schema 1 -> 2; ``dim``: the dimension of the bound embedding model, if one is bound."""
    doing = "moving vectors off the records (schema 1 -> 2)"
    # Version 1 wrote the float list on the records only: each Vector gets its own from its bytes.
    while rows := db.read("vectors_unembedded", doing, limit=_PAGE):
        db.write_one("write_vector_embeddings", doing, rows=[
            {"hash": r["hash"], "embedding": vector_list(np.frombuffer(r["vector"], dtype=VECTOR_DTYPE))}
            for r in rows])
    for statement in cypher_statements("migrate_vectors"):
        db.batched(statement, doing)
    if dim is not None:
        ensure_vector_indexes(db, dim)  # drops the indexes on the records, creates the new ones
        await_indexes(db)
    db.write_one("meta_schema_version", doing, meta=META, schema_version=SCHEMA_VERSION)
