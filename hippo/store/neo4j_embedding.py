"""The Neo4j store's embedding half: which model and backend made its vectors, and re-embedding.

A mixin of ``Neo4jStore`` (it runs through the store's sessions and error
guard). Re-embedding stages ``(:StagedVector {hash, vector, dim, embedding})``
nodes beside the live ``(:Vector)`` cache, in transactions of their own that
readers never see; the swap is one transaction that replaces the (:Vector)
nodes by the staged ones and labels them by the kinds of record that use them,
which is what the vector indexes cover, all inside the server
(``cypher/swap_vectors.cypher``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import numpy as np

from hippo.errors import Conflict
from hippo.store.base import LEGACY_BACKEND, BoundIdentity, EmbeddingIdentity, binding_error
from hippo.store.cypher import cypher, cypher_statements

T = TypeVar("T")
_STAGE_CHUNK = 1000


def _identity(row: Any) -> EmbeddingIdentity | None:
    if not row or row["model"] is None or row["dim"] is None:
        return None
    return EmbeddingIdentity(row["model"], int(row["dim"]), row["backend"] or LEGACY_BACKEND)


class Neo4jEmbeddings(BoundIdentity):
    # Provided by Neo4jStore:
    url: str
    _META: str
    _SCHEMA_VERSION: str
    _read: Callable[..., list[Any]]
    _session: Callable[[], Any]
    _guard: Callable[[str, Callable[[], Any]], Any]
    _schema: Callable[..., None]
    _ensure_vector_indexes: Callable[[int], None]

    def _write_tx(self, doing: str, work: Callable[[Any], T]) -> T:
        def run() -> T:
            with self._session() as session:
                return session.execute_write(work)

        return self._guard(doing, run)

    def _lock_meta(self, tx: Any) -> Any:
        return tx.run(cypher("meta_lock"), meta=self._META, schema_version=self._SCHEMA_VERSION).single()

    def _bound(self) -> EmbeddingIdentity | None:
        rows = self._read("meta_read", "reading the embedding model", meta=self._META)
        return _identity(rows[0] if rows else None)

    def bind_embedding_model(self, name: str, dim: int, backend: str = LEGACY_BACKEND) -> None:
        wanted = EmbeddingIdentity(name, int(dim), backend)

        def work(tx: Any) -> EmbeddingIdentity | None:
            bound = _identity(self._lock_meta(tx))
            if bound is None:
                self._set_identity(tx, wanted)
            return bound

        bound = self._write_tx("binding the embedding model", work)
        if bound is not None and not bound.compatible(wanted):
            raise binding_error(self.url, bound, wanted)
        if bound is None:
            self._ensure_vector_indexes(wanted.dim)
            self._schema(cypher("await_indexes"), "waiting for indexes", seconds=300)

    def _set_identity(self, tx: Any, identity: EmbeddingIdentity) -> None:
        tx.run(cypher("meta_bind_model"), meta=self._META, name=identity.model, dim=identity.dim,
               backend=identity.backend).consume()

    # -- re-embedding ------------------------------------------------------------------

    def staged_hashes(self, identity: EmbeddingIdentity) -> set[str]:
        rows = self._read("meta_read", "reading the staged identity", meta=self._META)
        if not rows or rows[0]["staged"] != identity.key():
            return set()
        return {r["hash"] for r in self._read("staged_hashes", "reading staged vectors")}

    def stage_vectors(self, identity: EmbeddingIdentity, vectors: Mapping[str, np.ndarray]) -> None:
        rows = [{"hash": h, "vector": np.ascontiguousarray(v, dtype="<f4").tobytes(), "dim": int(v.shape[-1]),
                 "embedding": np.asarray(v, dtype=np.float32).astype(np.float64).tolist()}
                for h, v in vectors.items()]

        def work(tx: Any) -> None:
            self._lock_meta(tx)
            tx.run(cypher("staged_begin"), meta=self._META, identity=identity.key()).consume()
            for start in range(0, len(rows), _STAGE_CHUNK):
                tx.run(cypher("write_staged_vectors"), rows=rows[start : start + _STAGE_CHUNK]).consume()

        self._write_tx("staging vectors", work)

    def swap_staged_vectors(self, identity: EmbeddingIdentity) -> int:
        def work(tx: Any) -> int:
            meta = self._lock_meta(tx)
            if meta["staged"] != identity.key():
                raise Conflict(f"no vectors are staged for {identity.describe()}; nothing was changed")
            missing = tx.run(cypher("staged_missing")).single()["missing"]
            if missing:
                raise Conflict(f"{missing} stored texts have no staged vector (written since the re-embedding "
                               "began); nothing was changed")
            for statement in cypher_statements("swap_vectors"):
                tx.run(statement, meta=self._META).consume()
            self._set_identity(tx, identity)
            return int(tx.run(cypher("meta_bump"), meta=self._META, seq=int(meta["seq"] or 0)).single()["revision"])

        revision = self._write_tx("swapping in re-embedded vectors", work)
        self._ensure_vector_indexes(identity.dim)  # a new model may bring another dimension
        self._schema(cypher("await_indexes"), "waiting for indexes", seconds=300)
        return revision
