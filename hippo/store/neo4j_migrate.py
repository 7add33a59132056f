"""Upgrades of a Neo4j store written by an older hippo, run on open.

Schema 1 -> 2 moves the vectors off the records people browse: version 1 kept
a float list ``embedding`` on every Passage, Entity and RELATES (and the
vector indexes on those labels); version 2 keeps it on the (:Vector) nodes
only, labelled by the kinds of record that use them
(``cypher/schema_vector_indexes.cypher`` describes the layout). Every step is
idempotent and the schema version moves last, so a migration cut short is
finished by the next open.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from hippo.store.neo4j import Neo4jStore

_PAGE = 1000


def migrate_vectors(store: Neo4jStore) -> None:
    from hippo.store.neo4j import _META, _SCHEMA_VERSION, _VECTOR_DTYPE, _vector_list, cypher, cypher_statements

    doing = "moving vectors off the records (schema 1 -> 2)"
    # Version 1 wrote the float list on the records only: each Vector gets its own from its bytes.
    while rows := store._read("vectors_unembedded", doing, limit=_PAGE):
        store._write_one("write_vector_embeddings", doing, rows=[
            {"hash": r["hash"], "embedding": _vector_list(np.frombuffer(r["vector"], dtype=_VECTOR_DTYPE))}
            for r in rows])
    for statement in cypher_statements("migrate_vectors"):
        store._schema(statement, doing)
    bound = store.embedding_model()
    if bound is not None:
        store._ensure_vector_indexes(bound[1])  # drops the indexes on the records, creates the new ones
        store._schema(cypher("await_indexes"), "waiting for indexes", seconds=300)
    store._write_one("meta_schema_version", doing, meta=_META, schema_version=_SCHEMA_VERSION)
