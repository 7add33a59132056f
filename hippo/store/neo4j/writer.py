"""The batch writer: one ``Store.write`` as one explicit Neo4j transaction.

It locks the meta node, writes with batched ``UNWIND`` statements, checks that every fact,
mention, synonym and passage found the records it points at (SQLite gets this from foreign
keys; here a missing one aborts the whole transaction), and bumps the revision only when the
summary counters say something changed.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any, TypeVar

import numpy as np

from hippo.errors import StoreError
from hippo.models import Entity, Fact, Passage
from hippo.store.base import WriteBatch, embed_hash
from hippo.store.common import check_versions, chunks
from hippo.store.cypher import cypher
from hippo.store.neo4j.schema import META, lock_meta
from hippo.store.neo4j.vectors import VECTOR_DTYPE, vector_bytes, vector_list
from hippo.text import keyword_tokens

R = TypeVar("R", Passage, Entity, Fact)

CHUNK = 1000  # rows per UNWIND statement (all statements of a write share one transaction)
ID_CHUNK = 10_000  # ids per read statement


def passage_words(p: Passage) -> dict[str, str | int]:
    """The passage's words as BM25 counts them, space-separated, and how many: the store's
    ``passage_words`` full-text index splits on white space only, so Lucene and hippo see the
    same words, and BM25's length norm counts them as in process."""
    words = keyword_tokens(p.embed_text)
    return {"words": " ".join(words), "word_count": len(words)}


def passage_name(p: Passage) -> str:
    """A short caption for the Browser: the title and the passage number, else the text's start."""
    if p.title:
        return f"{p.title} #{p.index}" if p.index else p.title
    head = " ".join(p.text.split())
    return head if len(head) <= 48 else head[:47] + "…"


CHANGES_KEPT = 256  # writes whose (:Change) is kept: a reader further behind drops its cached edges
CHANGE_MAX_NODES = 5_000  # a write touching more nodes says "everything" (readers start over)


class BatchWriter:
    """The unit of work of one ``write``: a pure function of the batch, so the driver
    may run it again from the start after a transient error."""

    def __init__(self, batch: WriteBatch) -> None:
        # Duplicates inside one batch: the first record wins for inserts (INSERT OR IGNORE),
        # the last for upserts (documents, synonym scores), as in the embedded store.
        self.documents = list({d.id: d for d in batch.documents}.values())
        self.passages = first_by_id(batch.passages)
        self.entities = first_by_id(batch.entities)
        self.facts = first_by_id(batch.facts)
        self.mentions = list(dict.fromkeys((m.passage_id, m.entity_id) for m in batch.mentions))
        self.synonyms = list({(s.a, s.b): float(s.score) for s in batch.synonyms}.items())
        self.vectors = {h: np.asarray(v, dtype=np.float32) for h, v in batch.vectors.items()}
        self.retire, self.revive = list(dict.fromkeys(batch.retire)), list(dict.fromkeys(batch.revive))
        self.retire_reason = batch.retire_reason
        self.retire_at = batch.retire_at or datetime.now(UTC)
        self.expect_versions = dict(batch.expect_versions)
        self.write_id = batch.write_id

    def __call__(self, tx: Any) -> int:
        changed = 0

        def run(name: str, rows: list[dict[str, Any]], **extra: Any) -> list[Any]:
            nonlocal changed
            records: list[Any] = []
            query = cypher(name)
            for part in chunks(rows, CHUNK):
                result = tx.run(query, rows=part, **extra)
                records.extend(result)
                c = result.consume().counters
                changed += c.nodes_created + c.relationships_created + c.properties_set + c.nodes_deleted
            return records

        meta = lock_meta(tx)
        seq = int(meta["seq"] or 0)
        if self.expect_versions:
            found = {r["id"]: int(r["version"] or 0)
                     for r in tx.run(cypher("document_versions"), ids=list(self.expect_versions))}
            check_versions(self.expect_versions, found)

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
        for part in chunks(sorted(need), ID_CHUNK):
            for row in tx.run(cypher("vectors_by_hash"), hashes=part):
                known[row["hash"]] = np.frombuffer(row["vector"], dtype=VECTOR_DTYPE)

        run("write_documents", [
            {"id": d.id, "seq": seq + i, "props": {
                "id": d.id, "title": d.title, "name": d.title or d.id, "source": d.source, "space": d.space,
                "version": d.version, "meta": json.dumps(d.meta, sort_keys=True), "kind": d.kind,
                "forgotten_at": d.forgotten_at, "forgotten_reason": d.forgotten_reason}}
            for i, d in enumerate(self.documents)])
        seq += len(self.documents)

        def waiting(record: Passage | Entity | Fact) -> bool | None:  # null: the property is not set
            return True if embed_hash(record) not in known else None

        vector_rows = [{"hash": h, "vector": vector_bytes(v), "dim": int(v.shape[-1]), "embedding": vector_list(v)}
                       for h, v in self.vectors.items() if h not in stored_hashes]
        run("write_vectors", vector_rows)

        created = run("write_passages", [
            {"doc_id": p.doc_id, "seq": seq + i, "props": {
                "id": p.id, "doc_id": p.doc_id, "index": p.index, "title": p.title, "text": p.text,
                "name": passage_name(p), "space": p.space, "version": p.version, "embed_hash": embed_hash(p),
                "waiting": waiting(p), "source": p.source, "page": p.page, "headings": p.headings or None,
                **passage_words(p)}}
            for i, p in enumerate(passages)])
        seq += len(passages)
        missing = {p.id for p in passages} - {pid for r in created for pid in r["created"]}
        if missing:
            p = next(p for p in passages if p.id in missing)
            raise StoreError(f"batch refused: passage {p.id} belongs to document {p.doc_id}, "
                                "which is not stored; nothing was written")

        run("write_entities", [
            {"seq": seq + i, "props": {"id": e.id, "name": e.name, "key": e.key, "type": e.type,
                                       "embed_hash": embed_hash(e), "waiting": waiting(e)}}
            for i, e in enumerate(entities)])
        seq += len(entities)

        created = run("write_facts", [
            {"subject_id": f.subject_id, "object_id": f.object_id, "passage_id": f.passage_id, "seq": seq + i,
             "props": {"id": f.id, "predicate": f.predicate, "passage_id": f.passage_id,
                       "subject_id": f.subject_id, "object_id": f.object_id, "subject": f.subject,
                       "object": f.object, "embed_hash": embed_hash(f), "waiting": waiting(f)}}
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
        arrived: dict[str, list[str]] = {}
        for kind, family, records, new in (("passage", "passages", self.passages, passages),
                                           ("entity", "entities", self.entities, entities),
                                           ("fact", "facts", self.facts, facts)):
            fresh = {r.id for r in new}
            hashes = sorted({h for r in records if (h := embed_hash(r)) in known and (r.id in fresh or h in late)})
            for part in chunks(hashes, CHUNK):
                c = tx.run(cypher(f"write_vector_kinds_{kind}"), hashes=part).consume().counters
                changed += c.labels_added
            arrived[family] = [r.id for r in records if r.id not in fresh and embed_hash(r) in late]
        if any(arrived.values()):
            changed += tx.run(cypher("write_arrived"), **arrived).single()["arrived"]

        if not changed:
            return int(meta["revision"] or 0)
        revision = int(tx.run(cypher("meta_bump"), meta=META, seq=seq, write_id=self.write_id).single()["revision"])
        touched = self._touched(tx)
        tx.run(cypher("write_change"), revision=revision, keep=CHANGES_KEPT,
               nodes=sorted(touched) if len(touched) <= CHANGE_MAX_NODES else None).consume()
        return revision

    def _touched(self, tx: Any) -> set[str]:
        """The nodes whose visible edges, strength or passage count this write moves: both ends of every
        new edge, and the passages forgotten or restored with their entities and facts' ends."""
        touched = {p.id for p in self.passages} | {x for pair in self.mentions for x in pair}
        touched |= {x for f in self.facts for x in (f.subject_id, f.object_id)}
        touched |= {x for pair, _ in self.synonyms for x in pair}
        moved = [*self.retire, *self.revive]
        touched.update(moved)
        for part in chunks(moved, ID_CHUNK):
            for row in tx.run(cypher("touched_by_passages"), ids=part):
                touched.update(row["touched"])
        return touched

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


def first_by_id(records: list[R]) -> list[R]:
    first: dict[str, R] = {}
    for record in records:
        first.setdefault(record.id, record)
    return list(first.values())
