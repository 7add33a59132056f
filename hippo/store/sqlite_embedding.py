"""The SQLite store's embedding half: which model and backend made its vectors, and re-embedding.

A mixin of ``SQLiteStore`` (it uses the store's connection, lock and record
readers), kept apart so each file has one job.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import Any

import numpy as np

from hippo.errors import Conflict
from hippo.models import Entity, Fact, Passage
from hippo.store.base import (LEGACY_BACKEND, BoundIdentity, EmbeddingIdentity, binding_error, embed_hash,
                              embed_text)


def blob(vector: np.ndarray) -> bytes:
    return np.ascontiguousarray(vector, dtype=np.float32).tobytes()


class SQLiteEmbeddings(BoundIdentity):
    # Provided by SQLiteStore:
    url: str
    _db: sqlite3.Connection
    _lock: threading.RLock
    _transaction: Callable[[], AbstractContextManager[sqlite3.Connection]]
    _meta: Callable[[str], str | None]
    _passage: Callable[[Any], Passage]
    _entity: Callable[[Any], Entity]
    _fact: Callable[[Any], Fact]
    _PASSAGE_COLUMNS: str
    _ENTITY_COLUMNS: str
    _FACT_COLUMNS: str

    def _bound(self) -> EmbeddingIdentity | None:
        with self._lock:
            name, dim, backend = (self._meta(k) for k in ("embedding_model", "embedding_dim", "embedding_backend"))
        return EmbeddingIdentity(name, int(dim), backend or LEGACY_BACKEND) if name and dim else None

    def bind_embedding_model(self, name: str, dim: int, backend: str = LEGACY_BACKEND) -> None:
        wanted = EmbeddingIdentity(name, dim, backend)
        with self._transaction():
            bound = self._bound()
            if bound is None:
                self._set_identity(wanted)
        if bound is not None and not bound.compatible(wanted):
            raise binding_error(self.url, bound, wanted)

    def _set_identity(self, identity: EmbeddingIdentity) -> None:
        self._db.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", [
            ("embedding_model", identity.model), ("embedding_dim", str(identity.dim)),
            ("embedding_backend", identity.backend)])

    # -- re-embedding ----------------------------------------------------------

    def embed_texts(self) -> dict[str, str]:
        with self._lock:
            passages = [self._passage(r) for r in self._db.execute(f"SELECT {self._PASSAGE_COLUMNS} FROM passages")]
            entities = [self._entity(r) for r in self._db.execute(f"SELECT {self._ENTITY_COLUMNS} FROM entities")]
            facts = [self._fact(r) for r in self._db.execute(f"SELECT {self._FACT_COLUMNS} FROM facts")]
        return {embed_hash(r): embed_text(r) for r in (*passages, *entities, *facts)}

    def staged_hashes(self, identity: EmbeddingIdentity) -> set[str]:
        with self._lock:
            if self._meta("staged_embedding") != identity.key():
                return set()
            return {r[0] for r in self._db.execute("SELECT hash FROM vectors_staged")}

    def stage_vectors(self, identity: EmbeddingIdentity, vectors: Mapping[str, np.ndarray]) -> None:
        with self._transaction() as db:
            if self._meta("staged_embedding") != identity.key():
                db.execute("DELETE FROM vectors_staged")
                db.execute("INSERT OR REPLACE INTO meta VALUES ('staged_embedding', ?)", (identity.key(),))
            db.executemany("INSERT OR REPLACE INTO vectors_staged (hash, vector) VALUES (?,?)",
                           [(h, blob(v)) for h, v in vectors.items()])

    def swap_staged_vectors(self, identity: EmbeddingIdentity) -> int:
        with self._transaction() as db:
            if self._meta("staged_embedding") != identity.key():
                raise Conflict(f"no vectors are staged for {identity.describe()}; nothing was changed")
            [missing] = db.execute(
                "SELECT COUNT(*) FROM (SELECT embed_hash AS h FROM passages UNION SELECT embed_hash FROM entities "
                "UNION SELECT embed_hash FROM facts) WHERE h NOT IN (SELECT hash FROM vectors_staged)").fetchone()
            if missing:
                raise Conflict(f"{missing} stored texts have no staged vector (written since the re-embedding "
                               "began); nothing was changed")
            db.execute("DELETE FROM vectors")
            db.execute("INSERT INTO vectors (hash, vector) SELECT hash, vector FROM vectors_staged")
            db.execute("DELETE FROM vectors_staged")
            db.execute("DELETE FROM meta WHERE key = 'staged_embedding'")
            self._set_identity(identity)
            db.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'revision'")
            return int(self._meta("revision") or 0)
