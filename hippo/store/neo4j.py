"""Neo4j as the system of record, behind the same protocol as the embedded store.

Graph shape (what a person sees in the Neo4j Browser)::

    (:Document {title})-[:HAS_PASSAGE]->(:Passage {name, title, text})-[:MENTIONS]->(:Entity {name})
    (:Entity)-[:RELATES {id, predicate, passage_id}]->(:Entity)       one relationship per fact
    (:Entity)-[:SYNONYM {score}]->(:Entity)                            once per pair, a < b
    (:Vector:PassageVector {hash, vector, dim, embedding})             one per embedded text (see below)
    (:StagedVector {hash, vector, dim, embedding})                     a re-embedding until its swap
    (:Meta {id: 'hippo', revision, seq, embedding_model, embedding_dim, embedding_backend})
    (:Value {id, namespace, key, value})                               the small key-value area

Vectors never sit on the records people browse. A record (Passage, Entity,
RELATES) names its vector by ``embed_hash``; the (:Vector) node with that
``hash`` holds it twice, as float32 bytes (``vector``, what hippo loads) and
as a float list (``embedding``, what the vector indexes read), and carries the
label of every kind that uses it (:PassageVector, :EntityVector, :FactVector),
one vector index per label (``cypher/schema_vector_indexes.cypher``). Stores of
schema version 1 are migrated on open (``cypher/migrate_vectors.cypher``).

Forgetting sets ``forgotten_at``/``forgotten_reason`` on passages (and on the
document for a whole-document forget); every graph read follows live passages
only, so nothing is deleted and ``revive`` undoes it.

Every Cypher statement lives in ``cypher/<name>.cypher`` at the repository root
(``HIPPO_CYPHER_DIR`` overrides). A ``write`` is one explicit transaction run by
the driver's ``execute_write`` (retried as a unit on transient errors): it first
locks the meta node, writes with batched ``UNWIND`` statements, checks that every
fact, mention, synonym and passage found the records it points at (SQLite gets
this from foreign keys; here a missing one aborts the whole transaction), and
bumps the revision only when the summary counters say something changed.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar
from urllib.parse import unquote, urlsplit

import numpy as np

from hippo.errors import Conflict, HippoError, StoreError
from hippo.models import DocumentRecord, Entity, Fact, Passage
from hippo.store.base import GraphData, Spaces, VectorKind, WriteBatch, embed_hash, embed_text
from hippo.store.cypher import cypher, cypher_dir, cypher_statements  # noqa: F401  (cypher_dir: re-exported)
from hippo.store.neo4j_embedding import Neo4jEmbeddings
from hippo.store.neo4j_migrate import migrate_vectors

try:
    import neo4j
    from neo4j import exceptions as neo4j_errors
except ImportError:  # pragma: no cover - the neo4j extra is not installed
    neo4j = None  # type: ignore[assignment]
    neo4j_errors = None  # type: ignore[assignment]

T = TypeVar("T")
R = TypeVar("R", Passage, Entity, Fact)

MIN_SERVER = (5, 26)
_SCHEMA_VERSION = "2"  # 2: vectors on (:Vector) nodes only (cypher/migrate_vectors.cypher)
_META = "hippo"
_CHUNK = 1000  # rows per UNWIND statement (all statements of a write share one transaction)
_ID_CHUNK = 10_000  # ids per read statement
_WORD = re.compile(r"\w+", re.UNICODE)
_VECTOR_DTYPE = np.dtype("<f4")
_SCHEMES = {"neo4j", "neo4j+s", "neo4j+ssc", "bolt", "bolt+s", "bolt+ssc"}


# -- helpers -----------------------------------------------------------------------


def lucene_query(text: str) -> str:
    """Quote every word, OR them: user text can never be read as Lucene syntax.

    Words are ``\\w+`` runs, so they hold no quote or backslash; the same words
    the embedded store gives FTS5.
    """
    words = dict.fromkeys(w.lower() for w in _WORD.findall(text))
    return " OR ".join(f'"{w}"' for w in words)


def _chunks(items: list[T], size: int = _CHUNK) -> Iterator[list[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _vector_bytes(vector: np.ndarray) -> bytes:
    return np.ascontiguousarray(vector, dtype=_VECTOR_DTYPE).tobytes()


def _vector_list(vector: np.ndarray) -> list[float]:
    return np.asarray(vector, dtype=np.float32).astype(np.float64).tolist()


def _passage_name(p: Passage) -> str:
    """A short caption for the Browser: the title and the passage number, else the text's start."""
    if p.title:
        return f"{p.title} #{p.index}" if p.index else p.title
    head = " ".join(p.text.split())
    return head if len(head) <= 48 else head[:47] + "…"


def _native_time(value: Any) -> datetime | str | None:
    if value is None or isinstance(value, (datetime, str)):
        return value
    to_native = getattr(value, "to_native", None)
    return to_native() if to_native else str(value)


def _server_version(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version)[:3])


def check_server_version(version: str, edition: str, where: str) -> None:
    """Refuse a server older than 5.26 (calendar versions such as 2025.01 are newer)."""
    parsed = _server_version(version)
    if not parsed or parsed[:2] < MIN_SERVER:
        raise StoreError(
            f"Neo4j at {where} runs {version} ({edition}); hippo needs Neo4j "
            f"{'.'.join(map(str, MIN_SERVER))} or newer"
        )


def _first_line(text: str) -> str:
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    return line if len(line) <= 300 else line[:297] + "…"


def _unreachable_reason(text: str) -> str:
    """The useful part of the driver's multi-line connection error."""
    if "looks like HTTP" in text:
        return "that port speaks HTTP, not Bolt (the Bolt port is usually 7687)"
    found = re.search(r"\(reason (?:\[Errno -?\d+\] )?([^)]*)\)", text)
    if found:
        return found.group(1).strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return _first_line(lines[-1]) if lines else ""


@dataclass(frozen=True)
class _Url:
    scheme: str
    address: str  # host:port, IPv6 hosts in brackets
    user: str | None
    password: str | None
    database: str | None


def _parse_url(url: str) -> _Url:
    """Split a Neo4j URL; errors never echo the password."""
    parts = urlsplit(url)
    host = parts.hostname or "localhost"
    if parts.scheme not in _SCHEMES:
        raise StoreError(f"not a Neo4j URL: {parts.scheme or '(no scheme)'}://{host} (use neo4j:// or bolt://)")
    try:
        port = parts.port or 7687
    except ValueError:
        raise StoreError(f"bad port in Neo4j URL {parts.scheme}://{host}") from None
    if ":" in host:
        host = f"[{host}]"
    return _Url(parts.scheme, f"{host}:{port}", unquote(parts.username) if parts.username else None,
                unquote(parts.password) if parts.password is not None else None,
                unquote(parts.path.strip("/")) or None)


# -- the store ---------------------------------------------------------------------


class Neo4jStore(Neo4jEmbeddings):
    """Implements ``hippo.store.base.Store`` with the official ``neo4j`` driver."""

    _META, _SCHEMA_VERSION = _META, _SCHEMA_VERSION

    def __init__(self, uri: str, user: str | None = None, password: str | None = None,
                 database: str | None = None, *, connection_timeout: float = 10.0,
                 max_retry_time: float = 30.0) -> None:
        """``uri`` is ``scheme://host:port``; credentials or a database in it are used
        when the arguments do not give them."""
        if neo4j is None:
            raise StoreError("the Neo4j store needs the neo4j driver: pip install 'hippo[neo4j]'")
        parsed = _parse_url(uri)
        self._uri = f"{parsed.scheme}://{parsed.address}"
        self.user = user or parsed.user or "neo4j"
        self.database = database or parsed.database
        self.url = f"{parsed.scheme}://{self.user}@{parsed.address}" + (f"/{self.database}" if self.database else "")
        try:
            self._driver = neo4j.GraphDatabase.driver(
                self._uri, auth=(self.user, password if password is not None else (parsed.password or "")),
                connection_timeout=connection_timeout, max_transaction_retry_time=max_retry_time,
                # "relationship type MENTIONS does not exist" on a new store's first reads: expected, and
                # a screenful on stderr. Other warnings (deprecations, performance) still come through.
                notifications_min_severity="WARNING", notifications_disabled_classifications=["UNRECOGNIZED"],
            )
        except (neo4j_errors.DriverError, neo4j_errors.Neo4jError, ValueError) as exc:
            raise StoreError(f"cannot open Neo4j at {self.url}: {_first_line(str(exc))}") from None
        try:
            self._connect()
        except BaseException:
            self._driver.close()
            raise

    @classmethod
    def from_url(cls, url: str, **kwargs: Any) -> Neo4jStore:
        """``neo4j://user:pass@host:7687/db``; user, password and database fall back to
        ``NEO4J_USER``, ``NEO4J_PASSWORD`` and ``NEO4J_DATABASE`` (percent-encode
        ``@ : / %`` in a password given in the URL)."""
        parsed = _parse_url(url)
        return cls(f"{parsed.scheme}://{parsed.address}",
                   parsed.user or os.environ.get("NEO4J_USER") or "neo4j",
                   parsed.password if parsed.password is not None else os.environ.get("NEO4J_PASSWORD"),
                   parsed.database or os.environ.get("NEO4J_DATABASE") or None, **kwargs)

    # -- plumbing --------------------------------------------------------------------

    def _error(self, exc: Exception, doing: str) -> StoreError:
        """One line a person can act on, for any driver or server error."""
        if isinstance(exc, neo4j_errors.AuthError):
            return StoreError(f"Neo4j at {self.url} refused user {self.user!r}: wrong user or password "
                              "(set NEO4J_USER / NEO4J_PASSWORD or put them in the URL)")
        if isinstance(exc, (neo4j_errors.ServiceUnavailable, neo4j_errors.SessionExpired)):
            reason = _unreachable_reason(str(exc)) or type(exc).__name__
            return StoreError(f"cannot reach Neo4j at {self.url} while {doing}: {reason}")
        if isinstance(exc, neo4j_errors.Neo4jError):
            code = exc.code or type(exc).__name__
            if code.endswith("DatabaseNotFound"):
                return StoreError(f"Neo4j at {self.url} has no database {self.database!r}")
            return StoreError(f"Neo4j refused {doing} at {self.url}: {code}: {_first_line(exc.message or '')}")
        return StoreError(f"Neo4j error while {doing} at {self.url}: {type(exc).__name__}: "
                          f"{_first_line(str(exc))}")

    def _guard(self, doing: str, work: Callable[[], T]) -> T:
        try:
            return work()
        except HippoError:
            raise
        except (neo4j_errors.DriverError, neo4j_errors.Neo4jError, OSError) as exc:
            raise self._error(exc, doing) from None

    def _session(self) -> Any:
        return self._driver.session(database=self.database)

    def _read(self, name: str, doing: str, **params: Any) -> list[Any]:
        """Run one read statement from ``cypher/<name>.cypher`` (retried on transient errors)."""
        return self._run(name, doing, write=False, **params)

    def _write_one(self, name: str, doing: str, **params: Any) -> list[Any]:
        return self._run(name, doing, write=True, **params)

    def _run(self, name: str, doing: str, *, write: bool, **params: Any) -> list[Any]:
        query = cypher(name)

        def work(tx: Any) -> list[Any]:
            return list(tx.run(query, params))

        def run() -> list[Any]:
            with self._session() as session:
                return (session.execute_write if write else session.execute_read)(work)

        return self._guard(doing, run)

    def _schema(self, query: str, doing: str, **params: Any) -> None:
        """Schema statements run in their own auto-commit transaction; racing openers are fine."""
        def run() -> None:
            with self._session() as session:
                try:
                    session.run(query, params).consume()
                except neo4j_errors.ClientError as exc:
                    if "AlreadyExists" not in (exc.code or ""):
                        raise

        self._guard(doing, run)

    # -- opening -----------------------------------------------------------------------

    def _connect(self) -> None:
        self._guard("connecting", self._driver.verify_connectivity)
        rows = self._read("server_components", "checking the server version")
        kernel = next((r for r in rows if r["name"] == "Neo4j Kernel"), rows[0] if rows else None)
        if kernel is None:
            raise StoreError(f"Neo4j at {self.url} did not report its version (dbms.components())")
        check_server_version(kernel["versions"][0], kernel["edition"], self.url)
        for statement in cypher_statements("schema"):
            self._schema(statement, "creating the schema")
        rows = self._write_one("meta_init", "creating the meta node", meta=_META,
                               schema_version=_SCHEMA_VERSION)
        found = rows[0]["schema_version"]
        if found == "1":
            migrate_vectors(self)
            found = _SCHEMA_VERSION
        if found != _SCHEMA_VERSION:
            raise StoreError(f"Neo4j at {self.url} holds a hippo graph of schema version {found}; "
                             f"this hippo reads version {_SCHEMA_VERSION}")
        bound = self.embedding_model()
        if bound is not None:
            self._ensure_vector_indexes(bound[1])
        self._schema(cypher("await_indexes"), "waiting for indexes", seconds=300)

    def _ensure_vector_indexes(self, dim: int) -> None:
        """Create the vector indexes for ``dim``; rebuild one left with another dimension, or on
        the records themselves (schema 1)."""
        labels = {"passage_embedding": ["PassageVector"], "entity_embedding": ["EntityVector"],
                  "fact_embedding": ["FactVector"]}
        for row in self._read("vector_indexes", "reading the vector indexes"):
            if row["dim"] != dim or list(row["labels"] or []) != labels.get(row["name"]):
                self._schema(cypher("drop_index"), "dropping a stale vector index", name=row["name"])
        for statement in cypher_statements("schema_vector_indexes"):
            self._schema(statement, "creating the vector indexes", dim=dim)

    # -- protocol ----------------------------------------------------------------------

    def revision(self) -> int:
        rows = self._read("meta_read", "reading the revision", meta=_META)
        return int(rows[0]["revision"]) if rows else 0

    def write(self, batch: WriteBatch) -> int:
        work = _BatchWriter(batch)

        def run() -> int:
            with self._session() as session:
                return session.execute_write(work)

        return self._guard("writing a batch", run)

    def existing_ids(self, ids: Iterable[str]) -> set[str]:
        found: set[str] = set()
        for part in _chunks(list(dict.fromkeys(ids)), _ID_CHUNK):
            [row] = self._read("existing_records", "looking up ids", documents=[], passages=part,
                               entities=part, facts=part, hashes=[])
            found.update(row["passages"], row["entities"], row["facts"])
        return found

    def vectors(self, hashes: Iterable[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        for part in _chunks(list(dict.fromkeys(hashes)), _ID_CHUNK):
            for row in self._read("vectors_by_hash", "reading cached vectors", hashes=part):
                found[row["hash"]] = np.frombuffer(row["vector"], dtype=_VECTOR_DTYPE).astype(np.float32)
        return found

    def load_graph(self) -> GraphData:
        doing = "loading the graph"
        rows = self._read("graph_passages", doing)
        passages = [(r["id"], r["space"]) for r in rows]
        texts = {r["id"]: f"{r['title']}\n{r['text']}" if r["title"] else r["text"] for r in rows}
        titles = {r["id"]: r["title"] for r in rows if r["title"]}
        entities = [r["id"] for r in self._read("graph_entities", doing)]
        facts = [(r["id"], r["subject_id"], r["object_id"], r["passage_id"])
                 for r in self._read("graph_facts", doing)]
        mentions = [(r["passage_id"], r["entity_id"]) for r in self._read("graph_mentions", doing)]
        live = set(entities)
        synonyms = [(r["a"], r["b"], float(r["score"])) for r in self._read("graph_synonyms", doing)
                    if r["a"] in live and r["b"] in live]
        return GraphData(passages, entities, facts, mentions, synonyms, texts, titles)

    def embed_texts(self) -> dict[str, str]:
        doing = "reading every record's text"
        records = [*(_passage(r) for r in self._read("all_passages", doing)),
                   *(_entity(r) for r in self._read("all_entities", doing)),
                   *(_fact(r) for r in self._read("all_facts", doing))]
        return {embed_hash(r): embed_text(r) for r in records}

    def load_vectors(self, kind: VectorKind) -> tuple[list[str], list[str], np.ndarray]:
        if kind not in ("passage", "entity", "fact"):
            raise ValueError(f"unknown vector kind {kind!r}")
        rows = self._read(f"vectors_{kind}", f"loading {kind} vectors")
        if not rows:
            bound = self.embedding_model()
            return [], [], np.zeros((0, bound[1] if bound else 0), dtype=np.float32)
        blob = b"".join(r["vector"] for r in rows)
        matrix = np.frombuffer(blob, dtype=_VECTOR_DTYPE).astype(np.float32).reshape(len(rows), -1)
        return [r["id"] for r in rows], [r["hash"] for r in rows], matrix

    def _by_id(self, name: str, ids: Iterable[str], make: Callable[[Any], T]) -> list[T]:
        wanted = list(dict.fromkeys(ids))
        found: dict[str, T] = {}
        for part in _chunks(wanted, _ID_CHUNK):
            for row in self._read(name, f"reading records ({name})", ids=part):
                found[row["id"]] = make(row)
        return [found[i] for i in wanted if i in found]

    def passages(self, ids: Iterable[str]) -> list[Passage]:
        return self._by_id("read_passages", ids, _passage)

    def documents(self, ids: Iterable[str]) -> list[DocumentRecord]:
        return self._by_id("read_documents", ids, _document)

    def document_passages(self, doc_ids: Iterable[str]) -> list[Passage]:
        found: list[Passage] = []
        for part in _chunks(list(dict.fromkeys(doc_ids)), _ID_CHUNK):
            found.extend(_passage(r) for r in self._read("read_document_passages", "reading versions", ids=part))
        return found

    def find_documents(self, *, spaces: Spaces = None, kind: str | None = None, live: bool = True,
                       limit: int = 1000) -> list[DocumentRecord]:
        rows = self._read("find_documents", "listing documents", spaces=None if spaces is None else sorted(spaces),
                          kind=kind, live=live, limit=int(limit))
        return [_document(r) for r in rows]

    def get_values(self, namespace: str, keys: Iterable[str]) -> dict[str, str]:
        found: dict[str, str] = {}
        for part in _chunks([_value_id(namespace, k) for k in dict.fromkeys(keys)], _ID_CHUNK):
            found.update((r["key"], r["value"]) for r in self._read("kv_read", "reading values", ids=part))
        return found

    def list_values(self, namespace: str, limit: int = 1000) -> dict[str, str]:
        rows = self._read("kv_list", "listing values", prefix=_value_id(namespace, ""), limit=int(limit))
        return {r["key"]: r["value"] for r in rows}

    def put_values(self, namespace: str, items: Mapping[str, str | None]) -> None:
        rows = [{"id": _value_id(namespace, k), "namespace": namespace, "key": k, "value": v}
                for k, v in items.items() if v is not None]
        gone = [_value_id(namespace, k) for k, v in items.items() if v is None]
        write, delete = cypher("kv_write"), cypher("kv_delete")

        def work(tx: Any) -> None:
            for part in _chunks(rows):
                tx.run(write, rows=part).consume()
            for part in _chunks(gone):
                tx.run(delete, ids=part).consume()

        def run() -> None:
            with self._session() as session:
                session.execute_write(work)

        self._guard("writing values", run)

    def entities(self, ids: Iterable[str]) -> list[Entity]:
        return self._by_id("read_entities", ids, _entity)

    def facts(self, ids: Iterable[str]) -> list[Fact]:
        return self._by_id("read_facts", ids, _fact)

    def keyword_search(self, query: str, k: int, spaces: Spaces = None) -> list[tuple[str, float]]:
        match = lucene_query(query)
        if not match or k <= 0:
            return []
        rows = self._read("keyword_search", "searching passages", query=match, k=int(k),
                          spaces=None if spaces is None else sorted(spaces))
        return [(r["id"], float(r["score"])) for r in rows]

    def counts(self) -> dict[str, int]:
        [row] = self._read("counts", "counting records")
        return {key: int(row[key]) for key in
                ("documents", "passages", "entities", "facts", "mentions", "synonyms")}

    def close(self) -> None:
        self._driver.close()

    def __repr__(self) -> str:
        return f"Neo4jStore({self.url!r})"


def _passage(r: Any) -> Passage:
    return Passage(id=r["id"], doc_id=r["doc_id"], index=r["index"], title=r["title"], text=r["text"],
                   space=r["space"], version=r["version"], forgotten_at=_native_time(r["forgotten_at"]),
                   forgotten_reason=r["forgotten_reason"], created_at=_native_time(r["created_at"]),
                   source=r["source"], page=r["page"], headings=list(r["headings"] or []))


def _entity(r: Any) -> Entity:
    return Entity(id=r["id"], name=r["name"], key=r["key"], type=r["type"])


def _fact(r: Any) -> Fact:
    return Fact(id=r["id"], subject_id=r["subject_id"], predicate=r["predicate"], object_id=r["object_id"],
                passage_id=r["passage_id"], subject=r["subject"], object=r["object"])


def _document(r: Any) -> DocumentRecord:
    return DocumentRecord(id=r["id"], title=r["title"] or "", source=r["source"], space=r["space"],
                          version=r["version"], meta=json.loads(r["meta"] or "{}"), kind=r["kind"] or "document",
                          forgotten_at=_native_time(r["forgotten_at"]), forgotten_reason=r["forgotten_reason"])


def _value_id(namespace: str, key: str) -> str:
    return f"{namespace}\x00{key}"


class _BatchWriter:
    """The unit of work of one ``write``: a pure function of the batch, so the driver
    may run it again from the start after a transient error."""

    def __init__(self, batch: WriteBatch) -> None:
        # Duplicates inside one batch: the first record wins for inserts (INSERT OR IGNORE),
        # the last for upserts (documents, synonym scores), as in the embedded store.
        self.documents = list({d.id: d for d in batch.documents}.values())
        self.passages = _first_by_id(batch.passages)
        self.entities = _first_by_id(batch.entities)
        self.facts = _first_by_id(batch.facts)
        self.mentions = list(dict.fromkeys((m.passage_id, m.entity_id) for m in batch.mentions))
        self.synonyms = list({(s.a, s.b): float(s.score) for s in batch.synonyms}.items())
        self.vectors = {h: np.asarray(v, dtype=np.float32) for h, v in batch.vectors.items()}
        self.retire, self.revive = list(dict.fromkeys(batch.retire)), list(dict.fromkeys(batch.revive))
        self.retire_reason = batch.retire_reason
        self.retire_at = batch.retire_at or datetime.now(UTC)
        self.expect_versions = dict(batch.expect_versions)

    def __call__(self, tx: Any) -> int:
        changed = 0

        def run(name: str, rows: list[dict[str, Any]], **extra: Any) -> list[Any]:
            nonlocal changed
            records: list[Any] = []
            query = cypher(name)
            for part in _chunks(rows):
                result = tx.run(query, rows=part, **extra)
                records.extend(result)
                c = result.consume().counters
                changed += c.nodes_created + c.relationships_created + c.properties_set + c.nodes_deleted
            return records

        meta = tx.run(cypher("meta_lock"), meta=_META, schema_version=_SCHEMA_VERSION).single()
        seq = int(meta["seq"] or 0)
        if self.expect_versions:
            found = {r["id"]: int(r["version"] or 0)
                     for r in tx.run(cypher("document_versions"), ids=list(self.expect_versions))}
            for doc_id, version in self.expect_versions.items():
                if found.get(doc_id, 0) != version:
                    raise Conflict(f"document {doc_id} is at version {found.get(doc_id, 0)}, not {version}: "
                                   "another writer changed it; nothing was written")

        stored = tx.run(cypher("existing_records"), documents=[], passages=[p.id for p in self.passages],
                        entities=[e.id for e in self.entities], facts=[f.id for f in self.facts],
                        hashes=list(self.vectors)).single()
        stored_passages, stored_entities = set(stored["passages"]), set(stored["entities"])
        stored_facts, stored_hashes = set(stored["facts"]), set(stored["hashes"])
        passages = [p for p in self.passages if p.id not in stored_passages]
        entities = [e for e in self.entities if e.id not in stored_entities]
        facts = [f for f in self.facts if f.id not in stored_facts]

        # Vectors of the new records (for the vector indexes): from the batch, else the cache.
        need = {embed_hash(r) for r in (*passages, *entities, *facts)} - set(self.vectors)
        known = dict(self.vectors)
        for part in _chunks(sorted(need), _ID_CHUNK):
            for row in tx.run(cypher("vectors_by_hash"), hashes=part):
                known[row["hash"]] = np.frombuffer(row["vector"], dtype=_VECTOR_DTYPE)

        run("write_documents", [
            {"id": d.id, "seq": seq + i, "props": {
                "id": d.id, "title": d.title, "name": d.title or d.id, "source": d.source, "space": d.space,
                "version": d.version, "meta": json.dumps(d.meta, sort_keys=True), "kind": d.kind,
                "forgotten_at": d.forgotten_at, "forgotten_reason": d.forgotten_reason}}
            for i, d in enumerate(self.documents)])
        seq += len(self.documents)
        vector_rows = [{"hash": h, "vector": _vector_bytes(v), "dim": int(v.shape[-1]), "embedding": _vector_list(v)}
                       for h, v in self.vectors.items() if h not in stored_hashes]
        run("write_vectors", vector_rows)

        created = run("write_passages", [
            {"doc_id": p.doc_id, "seq": seq + i, "props": {
                "id": p.id, "doc_id": p.doc_id, "index": p.index, "title": p.title, "text": p.text,
                "name": _passage_name(p), "space": p.space, "version": p.version, "embed_hash": embed_hash(p),
                "source": p.source, "page": p.page, "headings": p.headings or None}}
            for i, p in enumerate(passages)])
        seq += len(passages)
        missing = {p.id for p in passages} - {pid for r in created for pid in r["created"]}
        if missing:
            p = next(p for p in passages if p.id in missing)
            raise StoreError(f"batch refused: passage {p.id} belongs to document {p.doc_id}, "
                                "which is not stored; nothing was written")

        run("write_entities", [
            {"seq": seq + i, "props": {"id": e.id, "name": e.name, "key": e.key, "type": e.type,
                                       "embed_hash": embed_hash(e)}}
            for i, e in enumerate(entities)])
        seq += len(entities)

        created = run("write_facts", [
            {"subject_id": f.subject_id, "object_id": f.object_id, "passage_id": f.passage_id, "seq": seq + i,
             "props": {"id": f.id, "predicate": f.predicate, "passage_id": f.passage_id,
                       "subject_id": f.subject_id, "object_id": f.object_id, "subject": f.subject,
                       "object": f.object, "embed_hash": embed_hash(f)}}
            for i, f in enumerate(facts)])
        seq += len(facts)
        missing = {f.id for f in facts} - {fid for r in created for fid in r["created"]}
        if missing:
            f = next(f for f in facts if f.id in missing)
            self._refuse(tx, f"fact {f.id}", entities=[f.subject_id, f.object_id], passages=[f.passage_id])

        matched = run("write_mentions", [{"passage_id": p, "entity_id": e} for p, e in self.mentions])
        if sum(r["matched"] for r in matched) != len(self.mentions):
            self._refuse(tx, "a mention", entities=[e for _, e in self.mentions],
                         passages=[p for p, _ in self.mentions])
        matched = run("write_synonyms", [{"a": a, "b": b, "score": s} for (a, b), s in self.synonyms])
        if sum(r["matched"] for r in matched) != len(self.synonyms):
            self._refuse(tx, "a synonym", entities=[x for (a, b), _ in self.synonyms for x in (a, b)])

        run("retire_passages", self.retire, at=self.retire_at, reason=self.retire_reason)
        run("revive_passages", self.revive)

        # The vector indexes: the kind labels on the vectors of new records, and of stored ones
        # whose vector arrives late (a remember whose embedding timed out).
        late = set(self.vectors)
        for kind, records, new in (("passage", self.passages, passages), ("entity", self.entities, entities),
                                   ("fact", self.facts, facts)):
            fresh = {r.id for r in new}
            hashes = sorted({h for r in records if (h := embed_hash(r)) in known and (r.id in fresh or h in late)})
            for part in _chunks(hashes):
                c = tx.run(cypher(f"write_vector_kinds_{kind}"), hashes=part).consume().counters
                changed += c.labels_added

        if not changed:
            return int(meta["revision"] or 0)
        return int(tx.run(cypher("meta_bump"), meta=_META, seq=seq).single()["revision"])

    @staticmethod
    def _refuse(tx: Any, what: str, *, entities: list[str] = (), passages: list[str] = ()) -> None:
        """Name the first record ``what`` points at that is not stored, and abort."""
        ents, pas = list(dict.fromkeys(entities)), list(dict.fromkeys(passages))
        found = tx.run(cypher("existing_records"), documents=[], passages=pas, entities=ents, facts=[],
                       hashes=[]).single()
        gone = [f"entity {e}" for e in ents if e not in set(found["entities"])]
        gone += [f"passage {p}" for p in pas if p not in set(found["passages"])]
        target = gone[0] if gone else "a record"
        raise StoreError(f"batch refused: {what} points at {target}, which is not stored; nothing was written")


def _first_by_id(records: list[R]) -> list[R]:
    first: dict[str, R] = {}
    for record in records:
        first.setdefault(record.id, record)
    return list(first.values())
