"""The schema of a hippo graph in Neo4j: constraints and indexes, the meta node, the vector
indexes, and the version check on open (``hippo/cypher/schema*.cypher``)."""

from __future__ import annotations

from typing import Any

from hippo.errors import StoreError
from hippo.store.cypher import cypher, cypher_statements
from hippo.store.neo4j.connection import Connection, check_server_version

SCHEMA_VERSION = "6"  # 2: vectors on (:Vector) nodes only (hippo/cypher/migrate_vectors.cypher);
# 3: each passage keeps its BM25 words (``words``, ``word_count``) for the passage_words index;
# 4: degree counters on passages and entities, each fact its passage's visibility (migrate_walks.cypher);
# 5: each (:Space) keeps its live passages and their words (migrate_spaces.cypher);
# 6: a record written without a vector says so (``waiting``, migrate_waiting.cypher)
META = "hippo"  # the id of the (:Meta) node
VECTOR_INDEX_LABELS = {"passage_embedding": ["PassageVector"], "entity_embedding": ["EntityVector"],
                       "fact_embedding": ["FactVector"]}


def lock_meta(tx: Any) -> Any:
    """The meta node, write-locked for the rest of ``tx``: writers of one store go one at a time."""
    return tx.run(cypher("meta_lock"), meta=META, schema_version=SCHEMA_VERSION).single()


def server_version(db: Connection) -> tuple[str, str] | None:
    """(version, edition) of the Neo4j kernel, or None when the server does not say."""
    rows = db.read("server_components", "checking the server version")
    kernel = next((r for r in rows if r["name"] == "Neo4j Kernel"), rows[0] if rows else None)
    return (kernel["versions"][0], kernel["edition"]) if kernel else None


def prepare(db: Connection) -> str:
    """Check the server, create the schema and the meta node; the schema version the graph is at."""
    db.verify()
    version = server_version(db)
    if version is None:
        raise StoreError(f"Neo4j at {db.url} did not report its version (dbms.components())")
    check_server_version(*version, db.url)
    for statement in cypher_statements("schema"):
        db.schema(statement, "creating the schema")
    rows = db.write_one("meta_init", "creating the meta node", meta=META, schema_version=SCHEMA_VERSION)
    return rows[0]["schema_version"]


def read_schema_version(db: Connection) -> str | None:
    """Check the server and read the schema version, writing nothing (None: no hippo graph yet)."""
    db.verify()
    version = server_version(db)
    if version is None:
        raise StoreError(f"Neo4j at {db.url} did not report its version (dbms.components())")
    check_server_version(*version, db.url)
    return db.read("meta_schema_read", "reading the schema version", meta=META)[0]["schema_version"]


def indexes_command(db: Connection) -> str:
    return f"hippo neo4j indexes --store {db.url}"


def require_indexes(db: Connection, dim: int | None) -> None:
    """The full-text index and (once a model is bound) the vector indexes exist and are online;
    otherwise a StoreError naming the command that creates them."""
    found = {r["name"]: r["state"] for r in db.read("hippo_indexes", "reading the indexes")}
    wanted = ["passage_text", "passage_words", *(VECTOR_INDEX_LABELS if dim else [])]
    missing = [name for name in wanted if name not in found]
    if missing:
        raise StoreError(f"Neo4j at {db.url} has no index {', '.join(missing)} (a database written by an "
                         f"older hippo, or loaded by hand); create them with '{indexes_command(db)}'")
    failed = [name for name in wanted if found[name] == "FAILED"]
    if failed:
        raise StoreError(f"the index {', '.join(failed)} at {db.url} FAILED to build; drop it (DROP INDEX name) "
                         f"and create it again with '{indexes_command(db)}'")


def check_schema_version(db: Connection, found: str) -> None:
    if found == SCHEMA_VERSION:
        return
    older = found.isdigit() and int(found) < int(SCHEMA_VERSION)
    upgrade = f"; '{indexes_command(db)}' upgrades it (as any open that may change the schema)" if older else ""
    raise StoreError(f"Neo4j at {db.url} holds a hippo graph of schema version {found}; "
                     f"this hippo reads version {SCHEMA_VERSION}{upgrade}")


def int8_indexes(db: Connection) -> frozenset[str]:
    """The vector indexes that hold int8 codes (Neo4j's default, kept by older databases): their
    scores are approximate, so a store-side search scores its hits again from their vectors."""
    return frozenset(row["name"] for row in db.read("vector_indexes", "reading the vector indexes")
                     if row["quantized"])


def ensure_vector_indexes(db: Connection, dim: int, *, unquantize: bool = False) -> None:
    """Create the vector indexes for ``dim``; rebuild one left with another dimension, or on
    the records themselves (schema 1), and with ``unquantize`` one built with int8 codes (Neo4j's
    default, hippo's before: searched as it is until asked, a rebuild of 1M vectors takes ~30 min)."""
    for row in db.read("vector_indexes", "reading the vector indexes"):
        if row["dim"] != dim or list(row["labels"] or []) != VECTOR_INDEX_LABELS.get(row["name"]) \
                or (unquantize and row["quantized"]):
            db.schema(cypher("drop_index"), "dropping a stale vector index", name=row["name"])
    try:
        for statement in cypher_statements("schema_vector_indexes"):
            db.schema(statement, "creating the vector indexes", dim=dim)
    except StoreError as exc:
        raise StoreError(f"{exc}; a user allowed to change the schema can create them with "
                         f"'{indexes_command(db)}'") from None


def await_indexes(db: Connection, seconds: float = 300.0) -> None:
    """Wait up to ``seconds`` for every index to come online; past that, a StoreError naming those
    still being built and how far each is (Neo4j goes on building them in the background)."""
    try:
        db.schema(cypher("await_indexes"), "waiting for indexes", seconds=int(seconds))
    except StoreError:
        rows = db.read("hippo_indexes", "reading the indexes")
        building = [f"{r['name']} ({float(r['populationPercent'] or 0):.0f}%)" for r in rows
                    if r["state"] == "POPULATING"]
        if not building:
            raise
        raise StoreError(f"Neo4j at {db.url} is still building the index {', '.join(building)} after "
                         f"{seconds:.0f} s; it goes on in the background (a vector index of a million records "
                         f"takes most of an hour on 2 cores): open the store again later, or wait for it with "
                         f"'{indexes_command(db)} --timeout 0'") from None
