"""The Neo4j store's embedding half: which model and backend made its vectors, and re-embedding.

A mixin of ``Neo4jStore`` (it runs through the store's connection, ``db``).
Re-embedding stages ``(:StagedVector {hash, vector, dim, embedding})`` nodes
beside the live ``(:Vector)`` cache, in transactions of their own that
readers never see; the swap is one transaction that replaces the (:Vector)
nodes by the staged ones and labels them by the kinds of record that use them,
which is what the vector indexes cover, all inside the server
(``hippo/cypher/swap_vectors.cypher``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from hippo.store.base import LEGACY_BACKEND, BoundIdentity, EmbeddingIdentity, binding_error
from hippo.store.common import nothing_staged, texts_unstaged
from hippo.store.cypher import cypher, cypher_statements
from hippo.store.neo4j.connection import Connection
from hippo.store.neo4j.schema import META, await_indexes, ensure_vector_indexes, lock_meta
from hippo.store.neo4j.vectors import vector_bytes, vector_list

_STAGE_CHUNK = 1000


def _identity(row: Any) -> EmbeddingIdentity | None:
    if not row or row["model"] is None or row["dim"] is None:
        return None
    return EmbeddingIdentity(row["model"], int(row["dim"]), row["backend"] or LEGACY_BACKEND)


class Neo4jEmbeddings(BoundIdentity):
    # Provided by Neo4jStore:
    url: str
    db: Connection

    def _bound(self) -> EmbeddingIdentity | None:
        rows = self.db.read("meta_read", "reading the embedding model", meta=META)
        return _identity(rows[0] if rows else None)

    def as_kept(self, vectors: np.ndarray) -> np.ndarray:
        return np.asarray(vectors, dtype=np.float32)  # float32 bytes: given back exactly

    def bind_embedding_model(self, name: str, dim: int, backend: str = LEGACY_BACKEND) -> None:
        wanted = EmbeddingIdentity(name, int(dim), backend)

        def work(tx: Any) -> EmbeddingIdentity | None:
            bound = _identity(lock_meta(tx))
            if bound is None:
                self._set_identity(tx, wanted)
            return bound

        bound = self.db.transaction("binding the embedding model", work)
        if bound is not None and not bound.compatible(wanted):
            raise binding_error(self.url, bound, wanted)
        if bound is None:
            ensure_vector_indexes(self.db, wanted.dim)
            await_indexes(self.db)

    def _set_identity(self, tx: Any, identity: EmbeddingIdentity) -> None:
        tx.run(cypher("meta_bind_model"), meta=META, name=identity.model, dim=identity.dim,
               backend=identity.backend).consume()

    # -- re-embedding ------------------------------------------------------------------

    def staged_hashes(self, identity: EmbeddingIdentity) -> set[str]:
        rows = self.db.read("meta_read", "reading the staged identity", meta=META)
        if not rows or rows[0]["staged"] != identity.key():
            return set()
        return {r["hash"] for r in self.db.read("staged_hashes", "reading staged vectors")}

    def stage_vectors(self, identity: EmbeddingIdentity, vectors: Mapping[str, np.ndarray]) -> None:
        rows = [{"hash": h, "vector": vector_bytes(v), "dim": int(v.shape[-1]), "embedding": vector_list(v)}
                for h, v in vectors.items()]

        def work(tx: Any) -> None:
            lock_meta(tx)
            tx.run(cypher("staged_begin"), meta=META, identity=identity.key()).consume()
            for start in range(0, len(rows), _STAGE_CHUNK):
                tx.run(cypher("write_staged_vectors"), rows=rows[start : start + _STAGE_CHUNK]).consume()

        self.db.transaction("staging vectors", work)

    def swap_staged_vectors(self, identity: EmbeddingIdentity) -> int:
        def work(tx: Any) -> int:
            meta = lock_meta(tx)
            if meta["staged"] != identity.key():
                raise nothing_staged(identity)
            missing = tx.run(cypher("staged_missing")).single()["missing"]
            if missing:
                raise texts_unstaged(missing)
            for statement in cypher_statements("swap_vectors"):
                tx.run(statement, meta=META).consume()
            self._set_identity(tx, identity)
            bumped = tx.run(cypher("meta_bump"), meta=META, seq=int(meta["seq"] or 0), write_id=None)
            return int(bumped.single()["revision"])

        revision = self.db.transaction("swapping in re-embedded vectors", work)
        ensure_vector_indexes(self.db, identity.dim)  # a new model may bring another dimension
        await_indexes(self.db)
        return revision
