"""Upgrades of a Neo4j store written by an older hippo, run on open.

Schema 1 -> 2 moves the vectors off the records people browse: version 1 kept
a float list ``embedding`` on every Passage, Entity and RELATES (and the
vector indexes on those labels); version 2 keeps it on the (:Vector) nodes
only, labelled by the kinds of record that use them
(``hippo/cypher/schema_vector_indexes.cypher`` describes the layout).
Schema 2 -> 3 gives every passage its BM25 words (``words``, ``word_count``)
for the ``passage_words`` full-text index, which store-side recall scores with.
Schema 3 -> 4 gives every passage and entity the degree counters the writes now
keep, and every fact its passage's space and ``forgotten_at``
(``hippo/cypher/schema.cypher`` says why). Schema 4 -> 5 counts every space's
live passages and their words on a (:Space) node, as the writes now keep them.
Schema 5 -> 6 marks every record that has no vector (``waiting``), as the writes
now do, so finding what still waits for one reads those alone.
Every step is idempotent and the schema version moves last, so a migration cut
short is finished by the next open.
"""

from __future__ import annotations

import numpy as np

from hippo.models import Passage
from hippo.store.cypher import cypher_statements
from hippo.store.neo4j.connection import Connection
from hippo.store.neo4j.schema import META, SCHEMA_VERSION, await_indexes, ensure_vector_indexes
from hippo.store.neo4j.vectors import VECTOR_DTYPE, vector_list
from hippo.store.neo4j.writer import passage_words

_PAGE = 1000
UPGRADABLE = ("1", "2", "3", "4", "5")  # the schema versions an open brings to SCHEMA_VERSION


def migrate(db: Connection, found: str, dim: int | None) -> None:
    """Bring a graph of schema version ``found`` to this hippo's, one step after another."""
    if found == "1":
        migrate_vectors(db, dim)
    if found in ("1", "2"):
        migrate_words(db)
    if found in ("1", "2", "3"):
        migrate_walks(db)
    if found in ("1", "2", "3", "4"):
        migrate_spaces(db)
    if found in UPGRADABLE:
        migrate_waiting(db)


def migrate_words(db: Connection) -> None:
    """Schema 2 -> 3, a page of passages per transaction."""
    doing = "keeping each passage's BM25 words (schema 2 -> 3)"
    while rows := db.read("passages_unworded", doing, limit=_PAGE):
        db.write_one("write_passage_words", doing, rows=[
            {"id": r["id"], **passage_words(Passage(id=r["id"], doc_id="", title=r["title"] or "",
                                                      text=r["text"] or ""))}
            for r in rows])
    await_indexes(db)  # the passage_words index fills as the words arrive
    db.write_one("meta_schema_version", doing, meta=META, schema_version="3")


def migrate_walks(db: Connection) -> None:
    """Schema 3 -> 4 (also the last step of a bulk import): the degree counters of every passage and
    entity, and the visibility of every fact, where they are missing, in batches of their own."""
    doing = "keeping what store-side walks read at each node (schema 3 -> 4)"
    for statement in cypher_statements("migrate_walks"):
        db.batched(statement, doing)
    db.write_one("meta_schema_version", doing, meta=META, schema_version="4")


def migrate_spaces(db: Connection) -> None:
    """Schema 4 -> 5 (also a step of a bulk import): every space's live passages and words."""
    doing = "counting each space's live passages (schema 4 -> 5)"
    db.write_one("migrate_spaces", doing)
    db.write_one("meta_schema_version", doing, meta=META, schema_version="5")


def migrate_waiting(db: Connection) -> None:
    """Schema 5 -> 6 (also the last step of a bulk import): mark the records that have no vector."""
    doing = "marking the records that wait for a vector (schema 5 -> 6)"
    db.write_one("migrate_waiting", doing)
    db.write_one("meta_schema_version", doing, meta=META, schema_version=SCHEMA_VERSION)


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
    db.write_one("meta_schema_version", doing, meta=META, schema_version="2")
