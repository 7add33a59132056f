"""The SQLite store's embedding half: which model and backend made its vectors, how they are kept,
reading them whole, re-embedding, and halving an older store's (``hippo compact``).

Stores created since stop 56 keep vectors as float16 (meta ``vector_format``): half the bytes of
the file (a 100k-passage store's 1.3M vectors 2.7 GB -> 1.4 GB; ~14 GB less at 1M passages) for a
cosine that moves by < 1e-3 (MiniLM unit vectors: by ~1e-4). Older stores keep float32 until
``halve_vectors`` (``hippo compact``) rewrites them. Either way a vector is read back as float32.

A mixin of ``SQLiteStore`` (it uses the store's connection, lock and record
readers), kept apart so each file has one job.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager
from typing import Any

import numpy as np

from hippo.errors import StoreError
from hippo.models import Entity, Fact, Passage
from hippo.store.base import (LEGACY_BACKEND, BoundIdentity, EmbeddingIdentity, VectorKind, binding_error, embed_hash,
                              embed_text)
from hippo.store.common import nothing_staged, texts_unstaged


_VECTOR_BATCH = 65_536  # vector rows fetched at a time when a kind is read whole
_HALVE_BATCH = 8_192  # vector rows rewritten at a time by ``halve_vectors``
PAGE_SIZE = 8192  # a page of new (and compacted) stores: nine 384-d float16 vector rows with their hashes


FORMAT_KEY = "vector_format"  # in meta: "float16"; absent in stores made before it (float32)
HALF = np.dtype("<f2")
FULL = np.dtype("<f4")
_HALF_MAX = float(np.finfo(np.float16).max)


def stored_format(db: sqlite3.Connection) -> np.dtype:
    row = db.execute("SELECT value FROM meta WHERE key = ?", (FORMAT_KEY,)).fetchone()
    return HALF if row and row[0] == "float16" else FULL


def blob(vector: np.ndarray, dtype: np.dtype = FULL) -> bytes:
    if dtype == HALF:
        values = np.asarray(vector, dtype=np.float32)
        outside = values[~(np.abs(values) <= _HALF_MAX)]  # NaN is outside too
        if outside.size:
            raise StoreError(f"vector component {outside[0]} is outside float16's range (|x| <= {_HALF_MAX:g}), "
                             "which this store keeps its vectors in; embedders give unit vectors")
    return np.ascontiguousarray(vector, dtype=dtype).tobytes()


def unblob(data: bytes, dtype: np.dtype, rows: int | None = None) -> np.ndarray:
    """float32 vector (or ``rows`` of them) from stored bytes."""
    values = np.frombuffer(data, dtype=dtype).astype(np.float32)
    return values if rows is None else values.reshape(rows, -1)


class SQLiteEmbeddings(BoundIdentity):
    # Provided by SQLiteStore:
    url: str
    _db: sqlite3.Connection
    _lock: threading.RLock
    _transaction: Callable[[], AbstractContextManager[sqlite3.Connection]]
    _snapshot: Callable[[], AbstractContextManager[sqlite3.Connection]]
    _meta: Callable[[str], str | None]
    _passage: Callable[[Any], Passage]
    _entity: Callable[[Any], Entity]
    _fact: Callable[[Any], Fact]
    _PASSAGE_COLUMNS: str
    _ENTITY_COLUMNS: str
    _FACT_COLUMNS: str
    _format: np.dtype  # how vectors are kept (``stored_format``)

    _VECTOR_QUERIES = {
        "passage": "SELECT r.id, r.embed_hash, v.vector FROM passages r JOIN vectors v "
                   "ON v.hash = r.embed_hash WHERE r.forgotten_at IS NULL ORDER BY r.rowid",
        "entity": "SELECT r.id, r.embed_hash, v.vector FROM entities r JOIN vectors v "
                  "ON v.hash = r.embed_hash ORDER BY r.rowid",
        "fact": "SELECT r.id, r.embed_hash, v.vector FROM facts r JOIN passages p ON p.id = r.passage_id "
                "JOIN vectors v ON v.hash = r.embed_hash WHERE p.forgotten_at IS NULL ORDER BY r.rowid",
    }

    @property
    def vector_format(self) -> str:
        """"float16", or "float32" for a store made before it (``hippo compact`` rewrites it)."""
        return "float16" if self._format == HALF else "float32"

    def as_kept(self, vectors: np.ndarray) -> np.ndarray:
        return np.asarray(vectors, dtype=np.float32).astype(self._format).astype(np.float32)

    def load_vectors(self, kind: VectorKind) -> tuple[list[str], list[str], np.ndarray]:
        parts = list(self.vector_batches(kind))
        if not parts:
            bound = self.embedding_model()
            return [], [], np.zeros((0, bound[1] if bound else 0), dtype=np.float32)
        return ([rid for ids, _, _ in parts for rid in ids], [h for _, hashes, _ in parts for h in hashes],
                np.concatenate([matrix for _, _, matrix in parts]))

    def vector_batches(self, kind: VectorKind) -> Iterator[tuple[list[str], list[str], np.ndarray]]:
        """``_VECTOR_BATCH`` rows at a time, all in one snapshot."""
        with self._snapshot() as db:
            cursor = db.execute(self._VECTOR_QUERIES[kind])
            while rows := cursor.fetchmany(_VECTOR_BATCH):
                yield [r[0] for r in rows], [r[1] for r in rows], unblob(b"".join(r[2] for r in rows),
                                                                        self._format, len(rows))

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

    # -- float32 -> float16, and the pages that frees (``hippo compact``) ---------

    def halve_vectors(self, progress: Callable[[int, int], None] | None = None) -> int:
        """Rewrite a float32 store's vectors (live and staged) at float16, in one transaction, and bump
        the revision (the derived state held float32 rows of small kinds: it is built again on open).
        Returns the rows rewritten; 0 for a store that already keeps float16. A component float16
        cannot hold fails the whole rewrite, naming the vector, and leaves the store as it was."""
        with self._transaction() as db:
            if self._format == HALF:
                return 0
            total = sum(db.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("vectors", "vectors_staged"))
            done = 0
            for table in ("vectors", "vectors_staged"):
                after = ""
                while rows := db.execute(f"SELECT hash, vector FROM {table} WHERE hash > ? ORDER BY hash LIMIT ?",
                                         (after, _HALVE_BATCH)).fetchall():
                    halved = [(self._halved(h, v, table), h) for h, v in rows]
                    db.executemany(f"UPDATE {table} SET vector = ? WHERE hash = ?", halved)
                    after, done = rows[-1][0], done + len(rows)
                    if progress:
                        progress(done, total)
            db.execute("INSERT OR REPLACE INTO meta VALUES (?, 'float16')", (FORMAT_KEY,))
            db.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'revision'")
        self._format = HALF
        return done

    @staticmethod
    def _halved(hash_: str, data: bytes, table: str) -> bytes:
        try:
            return blob(unblob(data, FULL), HALF)  # ``blob`` refuses what float16 cannot hold
        except StoreError as exc:
            raise StoreError(f"vector {hash_} of {table}: {exc}; nothing was rewritten") from None

    def vacuum(self) -> None:
        """Give the file's free pages back (SQLite copies the live ones into a new file), then empty the WAL.
        A file of smaller pages moves to 8 KB ones on the way where it can: SQLite changes a page size only
        outside WAL mode, which it leaves only when no other connection has the file open."""
        with self._lock:
            resize = self._db.execute("PRAGMA page_size").fetchone()[0] != PAGE_SIZE and self._left_wal()
            try:
                if resize:
                    self._db.execute(f"PRAGMA page_size = {PAGE_SIZE}")
                self._db.execute("VACUUM")
            finally:
                if resize:
                    self._db.execute("PRAGMA journal_mode = WAL")
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def _left_wal(self) -> bool:
        try:
            return self._db.execute("PRAGMA journal_mode = DELETE").fetchone()[0] == "delete"
        except sqlite3.OperationalError:  # another connection holds the file
            return False

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
                           [(h, blob(v, self._format)) for h, v in vectors.items()])

    def swap_staged_vectors(self, identity: EmbeddingIdentity) -> int:
        with self._transaction() as db:
            if self._meta("staged_embedding") != identity.key():
                raise nothing_staged(identity)
            [missing] = db.execute(
                "SELECT COUNT(*) FROM (SELECT embed_hash AS h FROM passages UNION SELECT embed_hash FROM entities "
                "UNION SELECT embed_hash FROM facts) WHERE h NOT IN (SELECT hash FROM vectors_staged)").fetchone()
            if missing:
                raise texts_unstaged(missing)
            db.execute("DELETE FROM vectors")
            db.execute("INSERT INTO vectors (hash, vector) SELECT hash, vector FROM vectors_staged")
            db.execute("DELETE FROM vectors_staged")
            db.execute("DELETE FROM meta WHERE key = 'staged_embedding'")
            self._set_identity(identity)
            db.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'revision'")
            return int(self._meta("revision") or 0)
