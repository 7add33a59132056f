"""``Neo4jStore``: the ``Store`` protocol over one Neo4j database. Reads are here; the batch
writer, the schema, the connection and the embedding half each have a module of their own."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, TypeVar

import numpy as np

from hippo.errors import StoreError
from hippo.models import DocumentRecord, Entity, Fact, Passage, TextForm
from hippo.store.base import GraphData, Spaces, VectorKind, WriteBatch, embed_hash, embed_text
from hippo.store.common import chunks, in_order, keyword_query
from hippo.store.cypher import cypher
from hippo.store.neo4j.connection import Connection, parse_url
from hippo.store.neo4j.embeddings import Neo4jEmbeddings
from hippo.store.neo4j.migrate import UPGRADABLE, migrate
from hippo.store.neo4j.reader import Neo4jReader
from hippo.store.neo4j.records import document_of, entity_of, fact_of, passage_of, value_id
from hippo.store.neo4j.schema import (META, await_indexes, check_schema_version, ensure_vector_indexes,
                                      indexes_command, int8_indexes, prepare, read_schema_version, require_indexes)
from hippo.store.neo4j.vectors import VECTOR_DTYPE, vector_of
from hippo.store.neo4j.writer import CHUNK, ID_CHUNK, BatchWriter

T = TypeVar("T")


class Neo4jStore(Neo4jEmbeddings):
    """Implements ``hippo.store.base.Store`` with the official ``neo4j`` driver."""

    def __init__(self, uri: str, user: str | None = None, password: str | None = None,
                 database: str | None = None, *, connection_timeout: float = 10.0,
                 max_retry_time: float = 30.0, create_schema: bool = True, index_timeout: float = 300.0) -> None:
        """``uri`` is ``scheme://host:port``; credentials or a database in it are used
        when the arguments do not give them. ``create_schema=False`` opens without writing the
        schema (a user without schema rights, a read replica): the indexes must exist already.
        ``index_timeout``: seconds an open waits for indexes being built."""
        parsed = parse_url(uri)
        self.db = Connection(parsed, user or parsed.user or "neo4j",
                             password if password is not None else (parsed.password or ""),
                             database or parsed.database, connection_timeout=connection_timeout,
                             max_retry_time=max_retry_time)
        self.user, self.database, self.url = self.db.user, self.db.database, self.db.url
        self._int8: frozenset[str] | None = None  # vector indexes of int8 codes (``reader``)
        try:
            self._open(index_timeout) if create_schema else self._check()
        except BaseException:
            self.db.close()
            raise

    @classmethod
    def from_url(cls, url: str, **kwargs: Any) -> Neo4jStore:
        """``neo4j://user:pass@host:7687/db``; user, password and database fall back to
        ``NEO4J_USER``, ``NEO4J_PASSWORD`` and ``NEO4J_DATABASE`` (percent-encode
        ``@ : / %`` in a password given in the URL); ``HIPPO_NEO4J_SCHEMA=check`` opens
        without creating the schema (``create_schema=False``)."""
        parsed = parse_url(url)
        kwargs.setdefault("create_schema", os.environ.get("HIPPO_NEO4J_SCHEMA", "create").lower() != "check")
        return cls(f"{parsed.scheme}://{parsed.address}",
                   parsed.user or os.environ.get("NEO4J_USER") or "neo4j",
                   parsed.password if parsed.password is not None else os.environ.get("NEO4J_PASSWORD"),
                   parsed.database or os.environ.get("NEO4J_DATABASE") or None, **kwargs)

    def _open(self, index_timeout: float) -> None:
        found = prepare(self.db)
        if found in UPGRADABLE:
            bound = self.embedding_model()
            migrate(self.db, found, bound[1] if bound else None)
        else:
            check_schema_version(self.db, found)
        bound = self.embedding_model()
        if bound is not None:
            ensure_vector_indexes(self.db, bound[1])
        await_indexes(self.db, index_timeout)

    def _check(self) -> None:
        found = read_schema_version(self.db)
        if found is None:
            raise StoreError(f"Neo4j at {self.url} holds no hippo store yet; the first open must create its "
                             f"schema (without HIPPO_NEO4J_SCHEMA=check, or '{indexes_command(self.db)}')")
        check_schema_version(self.db, found)
        bound = self.embedding_model()
        require_indexes(self.db, bound[1] if bound else None)

    # -- protocol ----------------------------------------------------------------------

    def revision(self) -> int:
        return self.last_write()[0]

    def last_write(self) -> tuple[int, str | None]:
        rows = self.db.read("meta_read", "reading the revision", meta=META)
        return (int(rows[0]["revision"]), rows[0]["write_id"]) if rows else (0, None)

    def write(self, batch: WriteBatch) -> int:
        return self.db.transaction("writing a batch", BatchWriter(batch))

    def existing_ids(self, ids: Iterable[str]) -> set[str]:
        found: set[str] = set()
        for part in chunks(list(dict.fromkeys(ids)), ID_CHUNK):
            [row] = self.db.read("existing_records", "looking up ids", documents=[], passages=part,
                               entities=part, facts=part, hashes=[])
            found.update(row["passages"], row["entities"], row["facts"])
        return found

    def vectors(self, hashes: Iterable[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        for part in chunks(list(dict.fromkeys(hashes)), ID_CHUNK):
            for row in self.db.read("vectors_by_hash", "reading cached vectors", hashes=part):
                found[row["hash"]] = vector_of(row["vector"])
        return found

    def load_graph(self) -> GraphData:
        doing = "loading the graph"
        rows = self.db.read("graph_passages", doing)
        passages = [(r["id"], r["space"]) for r in rows]
        texts = {r["id"]: f"{r['title']}\n{r['text']}" if r["title"] else r["text"] for r in rows}
        titles = {r["id"]: r["title"] for r in rows if r["title"]}
        entities = [r["id"] for r in self.db.read("graph_entities", doing)]
        facts = [(r["id"], r["subject_id"], r["object_id"], r["passage_id"])
                 for r in self.db.read("graph_facts", doing)]
        mentions = [(r["passage_id"], r["entity_id"]) for r in self.db.read("graph_mentions", doing)]
        live = set(entities)
        synonyms = [(r["a"], r["b"], float(r["score"])) for r in self.db.read("graph_synonyms", doing)
                    if r["a"] in live and r["b"] in live]
        return GraphData(passages, entities, facts, mentions, synonyms, texts, titles)

    def embed_texts(self) -> dict[str, str]:
        doing = "reading every record's text"
        records = [*(passage_of(r) for r in self.db.read("all_passages", doing)),
                   *(entity_of(r) for r in self.db.read("all_entities", doing)),
                   *(fact_of(r) for r in self.db.read("all_facts", doing))]
        return {embed_hash(r): embed_text(r) for r in records}

    def load_vectors(self, kind: VectorKind) -> tuple[list[str], list[str], np.ndarray]:
        if kind not in ("passage", "entity", "fact"):
            raise ValueError(f"unknown vector kind {kind!r}")
        rows = self.db.read(f"vectors_{kind}", f"loading {kind} vectors")
        if not rows:
            bound = self.embedding_model()
            return [], [], np.zeros((0, bound[1] if bound else 0), dtype=np.float32)
        blob = b"".join(r["vector"] for r in rows)
        matrix = np.frombuffer(blob, dtype=VECTOR_DTYPE).astype(np.float32).reshape(len(rows), -1)
        return [r["id"] for r in rows], [r["hash"] for r in rows], matrix

    def vector_batches(self, kind: VectorKind) -> Iterator[tuple[list[str], list[str], np.ndarray]]:
        yield self.load_vectors(kind)  # one part: a Neo4j store past memory is read store-side instead

    def _by_id(self, name: str, ids: Iterable[str], make: Callable[[Any], T]) -> list[T]:
        wanted = list(dict.fromkeys(ids))
        found: dict[str, T] = {}
        for part in chunks(wanted, ID_CHUNK):
            for row in self.db.read(name, f"reading records ({name})", ids=part):
                found[row["id"]] = make(row)
        return in_order(wanted, found)

    def passages(self, ids: Iterable[str]) -> list[Passage]:
        return self._by_id("read_passages", ids, passage_of)

    def documents(self, ids: Iterable[str]) -> list[DocumentRecord]:
        return self._by_id("read_documents", ids, document_of)

    def document_passages(self, doc_ids: Iterable[str]) -> list[Passage]:
        found: list[Passage] = []
        for part in chunks(list(dict.fromkeys(doc_ids)), ID_CHUNK):
            found.extend(passage_of(r) for r in self.db.read("read_document_passages", "reading versions", ids=part))
        return found

    def find_documents(self, *, spaces: Spaces = None, kind: str | None = None, live: bool = True,
                       limit: int = 1000) -> list[DocumentRecord]:
        rows = self.db.read("find_documents", "listing documents", spaces=None if spaces is None else sorted(spaces),
                          kind=kind, live=live, limit=int(limit))
        return [document_of(r) for r in rows]

    def get_values(self, namespace: str, keys: Iterable[str]) -> dict[str, str]:
        found: dict[str, str] = {}
        for part in chunks([value_id(namespace, k) for k in dict.fromkeys(keys)], ID_CHUNK):
            found.update((r["key"], r["value"]) for r in self.db.read("kv_read", "reading values", ids=part))
        return found

    def list_values(self, namespace: str, limit: int = 1000) -> dict[str, str]:
        rows = self.db.read("kv_list", "listing values", prefix=value_id(namespace, ""), limit=int(limit))
        return {r["key"]: r["value"] for r in rows}

    def put_values(self, namespace: str, items: Mapping[str, str | None]) -> None:
        rows = [{"id": value_id(namespace, k), "namespace": namespace, "key": k, "value": v}
                for k, v in items.items() if v is not None]
        gone = [value_id(namespace, k) for k, v in items.items() if v is None]
        write, delete = cypher("kv_write"), cypher("kv_delete")

        def work(tx: Any) -> None:
            for part in chunks(rows, CHUNK):
                tx.run(write, rows=part).consume()
            for part in chunks(gone, CHUNK):
                tx.run(delete, ids=part).consume()

        self.db.transaction("writing values", work)

    def entities(self, ids: Iterable[str]) -> list[Entity]:
        return self._by_id("read_entities", ids, entity_of)

    def facts(self, ids: Iterable[str]) -> list[Fact]:
        return self._by_id("read_facts", ids, fact_of)

    def keyword_search(self, query: str, k: int, spaces: Spaces = None) -> list[tuple[str, float]]:
        match = keyword_query(query)
        if not match or k <= 0:
            return []
        try:
            rows = self.db.read("keyword_search", "searching passages", query=match, k=int(k),
                                spaces=None if spaces is None else sorted(spaces))
        except StoreError as exc:
            if "fulltext" in str(exc).lower():
                require_indexes(self.db, None)  # a missing full-text index gets its own message
            raise
        return [(r["id"], float(r["score"])) for r in rows]

    def reader(self, spaces: Spaces, *, max_fetch: int = 4096, parts: int = 1) -> Neo4jReader:
        """Store-side recall's reads within ``spaces`` (``hippo.store.neo4j.reader``)."""
        if self._int8 is None:  # read once: hippo builds float indexes only, so an index rebuilt since
            self._int8 = int8_indexes(self.db)  # costs at most scores computed again, never wrong ones
        return Neo4jReader(self.db, spaces, max_fetch=max_fetch, parts=parts, int8=self._int8)

    def text_form(self, spaces: Spaces) -> TextForm:
        """A reader's view as text, summed in the server (``hippo.memory.extent``)."""
        return self.reader(spaces).text_form()

    def live_spaces(self) -> frozenset[str]:
        """Every space that holds a live passage."""
        return frozenset(r["space"] for r in self.db.read("read_live_spaces", "reading the live spaces"))

    def counts(self) -> dict[str, int]:
        [row] = self.db.read("counts", "counting records")
        return {key: int(row[key]) for key in
                ("documents", "passages", "entities", "facts", "mentions", "synonyms")}

    def graph_counts(self) -> dict[str, int]:
        """Vertices, live passages, entities and edges by kind, as ``Projection.stats`` counts them."""
        [row] = self.db.read("graph_counts", "counting the graph")
        return {key: int(value) for key, value in row.items()}

    def close(self) -> None:
        self.db.close()

    def __repr__(self) -> str:
        return f"Neo4jStore({self.url!r})"


def create_indexes(url: str, timeout: float = 3600.0, *, unquantize: bool = False) -> list[str]:
    """Open the store at ``url`` creating its schema and indexes (what ``hippo neo4j indexes`` does);
    the names of hippo's full-text and vector indexes, all online within ``timeout`` seconds.
    ``unquantize``: build again the vector indexes built with int8 codes."""
    store = Neo4jStore.from_url(url, create_schema=True, index_timeout=timeout)
    try:
        bound = store.embedding_model()
        if unquantize and bound:
            ensure_vector_indexes(store.db, bound[1], unquantize=True)
            await_indexes(store.db, timeout)
        require_indexes(store.db, bound[1] if bound else None)
        return sorted(r["name"] for r in store.db.read("hippo_indexes", "reading the indexes"))
    finally:
        store.close()
