"""Storage behind one protocol: SQLite (embedded default) or Neo4j."""

from __future__ import annotations

from hippo.store.base import (EmbeddingIdentity, GraphData, Spaces, Store, VectorKind, WriteBatch, embed_hash,
                              embed_text)
from hippo.store.sqlite import SQLiteStore

__all__ = [
    "EmbeddingIdentity", "GraphData", "SQLiteStore", "Spaces", "Store", "VectorKind", "WriteBatch",
    "embed_hash", "embed_text", "open_store",
]


def open_store(url: str) -> Store:
    """Open a store from a path or URL: ``neo4j://``/``bolt://`` for Neo4j, else SQLite."""
    if url.split("://", 1)[0] in {"neo4j", "neo4j+s", "neo4j+ssc", "bolt", "bolt+s", "bolt+ssc"}:
        from hippo.store.neo4j import Neo4jStore  # optional dependency

        return Neo4jStore.from_url(url)
    if url.startswith("sqlite://"):
        url = url.removeprefix("sqlite://")
    return SQLiteStore(url)
