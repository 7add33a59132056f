"""The embedded default store: one SQLite file (or ``:memory:``)."""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import TypeVar

import numpy as np

from hippo.errors import StoreError
from hippo.models import DocumentRecord, Entity, Fact, Passage
from hippo.store.base import GraphData, Spaces, WriteBatch, embed_hash
from hippo.store.common import check_versions, in_order, keyword_query
from hippo.store.sqlite_embedding import (FORMAT_KEY, FULL, HALF, PAGE_SIZE, SQLiteEmbeddings, blob, stored_format,
                                          unblob)

R = TypeVar("R", Passage, Entity, Fact, DocumentRecord)
_SCHEMA_VERSION = "2"
_ADDED_COLUMNS = [  # (table, column, type) added since schema 1
    ("documents", "kind", "TEXT NOT NULL DEFAULT 'document'"),
    ("documents", "forgotten_at", "TEXT"),
    ("documents", "forgotten_reason", "TEXT"),
    ("passages", "forgotten_reason", "TEXT"),
    ("passages", "created_at", "TEXT"),
    # Where a passage sits in its source (hippo.documents): file path, page, heading path (JSON list).
    ("passages", "source", "TEXT"),
    ("passages", "page", "INTEGER"),
    ("passages", "headings", "TEXT"),
]
_CHUNK = 500  # ids per IN (...) query, below SQLite's variable limit
_TABLE_OF_PREFIX = {"passages": "passage:", "entities": "entity:", "facts": "fact:"}


def _chunks(items: list[str]) -> Iterator[list[str]]:
    for start in range(0, len(items), _CHUNK):
        yield items[start : start + _CHUNK]


def _marks(n: int) -> str:
    return ",".join("?" * n)


def _when(moment: datetime | None) -> str | None:
    """Timestamps are stored as UTC ISO 8601 text."""
    if moment is None:
        return None
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC).replace(tzinfo=None)
    return moment.isoformat(timespec="microseconds") + "Z"


class SQLiteStore(SQLiteEmbeddings):
    """Implements ``hippo.store.base.Store`` on stdlib ``sqlite3``."""

    def __init__(self, path: str | Path = ":memory:") -> None:
        self.url = str(path)
        if self.url != ":memory:":
            Path(self.url).parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = sqlite3.connect(self.url, check_same_thread=False, isolation_level=None)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open SQLite store at {self.url}: {exc}") from exc
        self._lock = threading.RLock()
        self._format = FULL  # until the meta table says (below)
        # New stores get 8 KB pages: nine float16 vector rows a page, not four (no effect on an old store;
        # restored at stop 56: a refactor, ecb6d08, had dropped it). A 256 MB page cache (default 2 MB):
        # 100k+ passages spend writes and id lookups in random B-tree pages (9.4 -> 2.8 s per 2,048 at 10k).
        self._db.execute(f"PRAGMA page_size = {PAGE_SIZE}")
        self._db.execute("PRAGMA cache_size = -262144")
        schema = resources.files("hippo.store").joinpath("sqlite_schema.sql").read_text()
        self._db.executescript(schema)
        self._migrate()
        if self._meta("revision") is None:  # a new store: float16 vectors (older ones stay float32)
            self._db.execute("INSERT OR IGNORE INTO meta VALUES (?, 'float16')", (FORMAT_KEY,))
        self._format = stored_format(self._db)
        self._db.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (_SCHEMA_VERSION,))
        self._db.execute("INSERT OR IGNORE INTO meta VALUES ('revision', '0')")

    def _migrate(self) -> None:
        """Add the lifecycle columns to a store written by hippo 0.1 (schema 1)."""
        with self._transaction() as db:
            for table, column, ddl in _ADDED_COLUMNS:
                columns = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
                if column not in columns:
                    db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {ddl}")
            db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (_SCHEMA_VERSION,))

    # -- transactions ----------------------------------------------------------

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            self._follow_format()
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            else:
                self._db.execute("COMMIT")

    @contextmanager
    def _snapshot(self) -> Iterator[sqlite3.Connection]:
        """Reads that see one state of the file (a read transaction), or the caller's transaction."""
        with self._lock:
            if self._db.in_transaction:
                yield self._db
                return
            self._db.execute("BEGIN")
            self._follow_format()
            try:
                yield self._db
            finally:
                self._db.execute("COMMIT")

    def _follow_format(self) -> None:
        """A float32 store may be halved by another process (``hippo compact``) while this one has it
        open; a halved store never goes back, so a float16 one is not asked again."""
        if self._format != HALF:
            self._format = stored_format(self._db)

    def _meta(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    # -- protocol --------------------------------------------------------------

    def revision(self) -> int:
        with self._lock:
            return int(self._meta("revision") or 0)

    def last_write(self) -> tuple[int, str | None]:
        with self._snapshot():
            return int(self._meta("revision") or 0), self._meta("write_id") or None

    def write(self, batch: WriteBatch) -> int:
        with self._transaction() as db:
            before = db.total_changes
            self._check_versions(db, batch.expect_versions)
            stored = self._existing(db, [p.id for p in batch.passages])
            new_passages = [p for p in batch.passages if p.id not in stored]
            db.executemany(
                "INSERT INTO documents (id, title, source, space, version, meta, kind, forgotten_at, "
                "forgotten_reason) VALUES (?,?,?,?,?,?,?,?,?) "
                "ON CONFLICT(id) DO UPDATE SET title=excluded.title, source=excluded.source, "
                "space=excluded.space, version=excluded.version, meta=excluded.meta, kind=excluded.kind, "
                "forgotten_at=excluded.forgotten_at, forgotten_reason=excluded.forgotten_reason "
                "WHERE (title, source, space, version, meta, kind, forgotten_at, forgotten_reason) IS NOT "
                "(excluded.title, excluded.source, excluded.space, excluded.version, excluded.meta, "
                "excluded.kind, excluded.forgotten_at, excluded.forgotten_reason)",
                [(d.id, d.title, d.source, d.space, d.version, json.dumps(d.meta, sort_keys=True), d.kind,
                  _when(d.forgotten_at), d.forgotten_reason) for d in batch.documents],
            )
            db.executemany(
                "INSERT INTO passages (id, doc_id, idx, title, text, space, version, embed_hash, source, page, "
                "headings) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                [(p.id, p.doc_id, p.index, p.title, p.text, p.space, p.version, embed_hash(p), p.source, p.page,
                  json.dumps(p.headings, ensure_ascii=False) if p.headings else None)
                 for p in new_passages],
            )
            retired_at = _when(batch.retire_at or datetime.now(UTC))
            db.executemany(
                "UPDATE passages SET forgotten_at = ?, forgotten_reason = ? WHERE id = ? AND forgotten_at IS NULL",
                [(retired_at, batch.retire_reason, pid) for pid in batch.retire],
            )
            db.executemany(
                "UPDATE passages SET forgotten_at = NULL, forgotten_reason = NULL "
                "WHERE id = ? AND forgotten_at IS NOT NULL",
                [(pid,) for pid in batch.revive],
            )
            db.executemany(
                "INSERT INTO passage_fts (rowid, title, text) "
                "SELECT rowid, title, text FROM passages WHERE id = ?",
                [(p.id,) for p in new_passages],
            )
            db.executemany(
                "INSERT OR IGNORE INTO entities (id, name, key, type, embed_hash) VALUES (?,?,?,?,?)",
                [(e.id, e.name, e.key, e.type, embed_hash(e)) for e in batch.entities],
            )
            db.executemany(
                "INSERT OR IGNORE INTO facts (id, subject_id, predicate, object_id, passage_id, "
                "subject, object, embed_hash) VALUES (?,?,?,?,?,?,?,?)",
                [(f.id, f.subject_id, f.predicate, f.object_id, f.passage_id, f.subject,
                  f.object, embed_hash(f)) for f in batch.facts],
            )
            db.executemany(
                "INSERT OR IGNORE INTO mentions (passage_id, entity_id) VALUES (?,?)",
                [(m.passage_id, m.entity_id) for m in batch.mentions],
            )
            db.executemany(
                "INSERT INTO synonyms (a, b, score) VALUES (?,?,?) "
                "ON CONFLICT(a, b) DO UPDATE SET score=excluded.score WHERE score != excluded.score",
                [(s.a, s.b, s.score) for s in batch.synonyms],
            )
            db.executemany(
                "INSERT OR IGNORE INTO vectors (hash, vector) VALUES (?,?)",
                [(h, blob(v, self._format)) for h, v in batch.vectors.items()],
            )
            if db.total_changes != before:
                db.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'revision'")
                db.execute("INSERT OR REPLACE INTO meta VALUES ('write_id', ?)", (batch.write_id or "",))
            return int(self._meta("revision") or 0)

    @staticmethod
    def _check_versions(db: sqlite3.Connection, expected: dict[str, int]) -> None:
        stored: dict[str, int] = {}
        for part in _chunks(list(expected)):  # one query per 500 documents, not one each
            stored.update(db.execute(f"SELECT id, version FROM documents WHERE id IN ({_marks(len(part))})", part))
        check_versions(expected, stored)

    def _existing(self, db: sqlite3.Connection, ids: list[str]) -> set[str]:
        found: set[str] = set()
        typed = {table: [i for i in ids if i.startswith(prefix)] for table, prefix in _TABLE_OF_PREFIX.items()}
        other = [i for i in ids if not i.startswith(tuple(_TABLE_OF_PREFIX.values()))]
        for table in ("passages", "entities", "facts"):
            for part in _chunks(typed[table] + other):  # hippo's ids name their kind: one table each
                rows = db.execute(f"SELECT id FROM {table} WHERE id IN ({_marks(len(part))})", part)
                found.update(r[0] for r in rows)
        return found

    def existing_ids(self, ids: Iterable[str]) -> set[str]:
        with self._lock:
            return self._existing(self._db, list(ids))

    def vectors(self, hashes: Iterable[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        with self._snapshot() as db:
            for part in _chunks(list(dict.fromkeys(hashes))):
                rows = db.execute(f"SELECT hash, vector FROM vectors WHERE hash IN ({_marks(len(part))})", part)
                found.update((h, unblob(v, self._format)) for h, v in rows)
        return found

    def load_graph(self) -> GraphData:
        with self._lock:
            db = self._db
            rows = db.execute(
                "SELECT id, space, title, text FROM passages WHERE forgotten_at IS NULL ORDER BY rowid"
            ).fetchall()
            passages = [(r[0], r[1]) for r in rows]
            texts = {r[0]: f"{r[2]}\n{r[3]}" if r[2] else r[3] for r in rows}
            titles = {r[0]: r[2] for r in rows if r[2]}
            facts = db.execute(
                "SELECT f.id, f.subject_id, f.object_id, f.passage_id FROM facts f "
                "JOIN passages p ON p.id = f.passage_id WHERE p.forgotten_at IS NULL ORDER BY f.rowid"
            ).fetchall()
            mentions = db.execute(
                "SELECT m.passage_id, m.entity_id FROM mentions m "
                "JOIN passages p ON p.id = m.passage_id WHERE p.forgotten_at IS NULL"
            ).fetchall()
            entities = [r[0] for r in db.execute(
                "SELECT id FROM entities e WHERE EXISTS (SELECT 1 FROM mentions m "
                "JOIN passages p ON p.id = m.passage_id "
                "WHERE m.entity_id = e.id AND p.forgotten_at IS NULL) ORDER BY rowid"
            )]
            live = set(entities)
            synonyms = [(a, b, s) for a, b, s in db.execute("SELECT a, b, score FROM synonyms")
                        if a in live and b in live]
        return GraphData(passages, entities, facts, mentions, synonyms, texts, titles)

    def _records(self, select: str, ids: Iterable[str], build: Callable[[sqlite3.Row], R]) -> list[R]:
        """Records by id, in the order asked, unknown ids left out. ``select`` ends in ``WHERE id IN``."""
        wanted = list(dict.fromkeys(ids))
        by_id: dict[str, R] = {}
        with self._lock:
            for part in _chunks(wanted):
                for row in self._db.execute(f"{select} ({_marks(len(part))})", part):
                    by_id[row[0]] = build(row)
        return in_order(wanted, by_id)

    _PASSAGE_COLUMNS = ("id, doc_id, idx, title, text, space, version, forgotten_at, forgotten_reason, created_at, "
                        "source, page, headings")
    _DOCUMENT_COLUMNS = "id, title, source, space, version, meta, kind, forgotten_at, forgotten_reason"

    @staticmethod
    def _passage(r: sqlite3.Row) -> Passage:
        return Passage(id=r[0], doc_id=r[1], index=r[2], title=r[3], text=r[4], space=r[5], version=r[6],
                       forgotten_at=r[7], forgotten_reason=r[8], created_at=r[9], source=r[10], page=r[11],
                       headings=json.loads(r[12]) if r[12] else [])

    @staticmethod
    def _document(r: sqlite3.Row) -> DocumentRecord:
        return DocumentRecord(id=r[0], title=r[1], source=r[2], space=r[3], version=r[4], meta=json.loads(r[5]),
                              kind=r[6], forgotten_at=r[7], forgotten_reason=r[8])

    def passages(self, ids: Iterable[str]) -> list[Passage]:
        return self._records(f"SELECT {self._PASSAGE_COLUMNS} FROM passages WHERE id IN", ids, self._passage)

    def documents(self, ids: Iterable[str]) -> list[DocumentRecord]:
        return self._records(f"SELECT {self._DOCUMENT_COLUMNS} FROM documents WHERE id IN", ids, self._document)

    def document_passages(self, doc_ids: Iterable[str]) -> list[Passage]:
        found: list[Passage] = []
        with self._lock:
            for part in _chunks(list(dict.fromkeys(doc_ids))):
                rows = self._db.execute(
                    f"SELECT {self._PASSAGE_COLUMNS} FROM passages WHERE doc_id IN ({_marks(len(part))}) "
                    "ORDER BY doc_id, version, idx", part)
                found.extend(self._passage(r) for r in rows)
        return found

    def find_documents(self, *, spaces: Spaces = None, kind: str | None = None, live: bool = True,
                       limit: int = 1000) -> list[DocumentRecord]:
        sql = f"SELECT {self._DOCUMENT_COLUMNS} FROM documents WHERE 1=1"
        params: list[object] = []
        if spaces is not None:
            sql += f" AND space IN ({_marks(len(spaces))})"
            params.extend(sorted(spaces))
        if kind is not None:
            sql += " AND kind = ?"
            params.append(kind)
        if live:
            sql += " AND forgotten_at IS NULL"
        sql += " ORDER BY rowid DESC LIMIT ?"
        params.append(int(limit))
        with self._lock:
            return [self._document(r) for r in self._db.execute(sql, params)]

    def get_values(self, namespace: str, keys: Iterable[str]) -> dict[str, str]:
        found: dict[str, str] = {}
        with self._lock:
            for part in _chunks(list(dict.fromkeys(keys))):
                rows = self._db.execute(
                    f"SELECT key, value FROM kv WHERE namespace = ? AND key IN ({_marks(len(part))})",
                    [namespace, *part])
                found.update(rows)
        return found

    def list_values(self, namespace: str, limit: int = 1000) -> dict[str, str]:
        with self._lock:
            return dict(self._db.execute("SELECT key, value FROM kv WHERE namespace = ? ORDER BY key LIMIT ?",
                                         (namespace, int(limit))))

    def put_values(self, namespace: str, items: Mapping[str, str | None]) -> None:
        with self._transaction() as db:
            db.executemany("INSERT INTO kv (namespace, key, value) VALUES (?,?,?) "
                           "ON CONFLICT(namespace, key) DO UPDATE SET value = excluded.value",
                           [(namespace, k, v) for k, v in items.items() if v is not None])
            db.executemany("DELETE FROM kv WHERE namespace = ? AND key = ?",
                           [(namespace, k) for k, v in items.items() if v is None])

    _ENTITY_COLUMNS = "id, name, key, type"
    _FACT_COLUMNS = "id, subject_id, predicate, object_id, passage_id, subject, object"

    @staticmethod
    def _entity(r: sqlite3.Row) -> Entity:
        return Entity(id=r[0], name=r[1], key=r[2], type=r[3])

    @staticmethod
    def _fact(r: sqlite3.Row) -> Fact:
        return Fact(id=r[0], subject_id=r[1], predicate=r[2], object_id=r[3], passage_id=r[4], subject=r[5],
                    object=r[6])

    def entities(self, ids: Iterable[str]) -> list[Entity]:
        return self._records(f"SELECT {self._ENTITY_COLUMNS} FROM entities WHERE id IN", ids, self._entity)

    def facts(self, ids: Iterable[str]) -> list[Fact]:
        return self._records(f"SELECT {self._FACT_COLUMNS} FROM facts WHERE id IN", ids, self._fact)

    def keyword_search(self, query: str, k: int, spaces: Spaces = None) -> list[tuple[str, float]]:
        match = keyword_query(query)
        if not match or k <= 0:
            return []
        sql = (
            "SELECT p.id, -bm25(passage_fts) AS score FROM passage_fts "
            "JOIN passages p ON p.rowid = passage_fts.rowid "
            "WHERE passage_fts MATCH ? AND p.forgotten_at IS NULL"
        )
        params: list[object] = [match]
        if spaces is not None:
            sql += f" AND p.space IN ({_marks(len(spaces))})"
            params.extend(sorted(spaces))
        sql += " ORDER BY score DESC LIMIT ?"
        params.append(k)
        with self._lock:
            return [(r[0], float(r[1])) for r in self._db.execute(sql, params)]

    def counts(self) -> dict[str, int]:
        with self._lock:
            count = lambda sql: int(self._db.execute(sql).fetchone()[0])  # noqa: E731
            return {
                "documents": count("SELECT COUNT(*) FROM documents"),
                "passages": count("SELECT COUNT(*) FROM passages WHERE forgotten_at IS NULL"),
                "entities": count("SELECT COUNT(*) FROM entities"),
                "facts": count("SELECT COUNT(*) FROM facts"),
                "mentions": count("SELECT COUNT(*) FROM mentions"),
                "synonyms": count("SELECT COUNT(*) FROM synonyms"),
            }

    def close(self) -> None:
        with self._lock:
            self._db.close()
