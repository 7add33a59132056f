"""What one write changes in the derived state, as plain data that can be saved and replayed.

``DerivedState.apply_delta`` follows a write from its ``Delta``; the saved
state's journal (``hippo.memory.persist``) keeps the same deltas, so replaying
it runs exactly the code the live write ran.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field, fields

import numpy as np

from hippo.models import Entity, Fact, Passage
from hippo.store.base import Store, VectorKind, WriteBatch, embed_hash

KINDS: tuple[VectorKind, ...] = ("passage", "entity", "fact")


@dataclass
class Delta:
    revision: int
    passages: list[tuple[str, str, str]] = field(default_factory=list)  # (id, space, keyword text)
    entities: list[str] = field(default_factory=list)
    facts: list[tuple[str, str, str, str]] = field(default_factory=list)  # (id, subject, object, passage)
    mentions: list[tuple[str, str]] = field(default_factory=list)
    synonyms: list[tuple[str, str, float]] = field(default_factory=list)
    retire: list[str] = field(default_factory=list)
    revive: list[str] = field(default_factory=list)
    texts: dict[str, str] = field(default_factory=dict)  # keyword texts of retired and revived passages
    titles: dict[str, str] = field(default_factory=dict)  # passage id -> title, for the passages that have one
    late: bool = False  # only vectors (and synonyms) for records already in the graph
    # Per kind: the records that came with this write, and the hashes of their vectors (None: none yet).
    records: dict[str, list[tuple[str, str | None]]] = field(default_factory=dict)
    vectors: dict[str, np.ndarray] = field(default_factory=dict)  # per kind, rows of the hashed records
    # The ``WriteBatch.write_id`` of the write, journaled before its commit; None in records that older
    # hippos journaled after the commit.
    write_id: str | None = None

    @classmethod
    def of_batch(cls, batch: WriteBatch, vectors: dict[str, np.ndarray], revision: int,
                 texts: dict[str, str] | None = None) -> Delta:
        delta = cls(
            revision=revision,
            passages=[(p.id, p.space, p.embed_text) for p in batch.passages],
            entities=[e.id for e in batch.entities],
            facts=[(f.id, f.subject_id, f.object_id, f.passage_id) for f in batch.facts],
            mentions=[(m.passage_id, m.entity_id) for m in batch.mentions],
            synonyms=[(s.a, s.b, s.score) for s in batch.synonyms],
            retire=list(batch.retire), revive=list(batch.revive), texts=dict(texts or {}),
            titles={p.id: p.title for p in batch.passages if p.title},
        )
        delta._add_records([*batch.passages, *batch.entities, *batch.facts], vectors)
        return delta

    @classmethod
    def of_write(cls, store: Store, batch: WriteBatch, vectors: dict[str, np.ndarray], revision: int,
                 late: list[Passage | Entity | Fact] | None = None) -> Delta:
        """The delta of a write, committed at ``revision`` or about to be; ``late``: the records a late
        embedding gave vectors to."""
        if late is not None:
            delta = cls.of_late(late, vectors, [(s.a, s.b, s.score) for s in batch.synonyms], revision)
        else:
            moved = [*batch.retire, *batch.revive]  # their keyword statistics move (texts never change)
            texts = {p.id: p.embed_text for p in store.passages(moved)} if moved else {}
            delta = cls.of_batch(batch, vectors, revision, texts)
        delta.write_id = batch.write_id
        return delta

    @classmethod
    def of_late(cls, records: list[Passage | Entity | Fact], vectors: dict[str, np.ndarray],
                synonyms: list[tuple[str, str, float]], revision: int) -> Delta:
        delta = cls(revision=revision, synonyms=list(synonyms), late=True)
        delta._add_records(records, vectors)
        return delta

    def _add_records(self, records: list[Passage | Entity | Fact], vectors: dict[str, np.ndarray]) -> None:
        for kind, of_kind in zip(KINDS, (Passage, Entity, Fact), strict=True):
            chosen = [r for r in records if isinstance(r, of_kind)]
            hashes = [embed_hash(r) for r in chosen]
            self.records[kind] = [(r.id, h if h in vectors else None) for r, h in zip(chosen, hashes, strict=True)]
            ready = [h for h in hashes if h in vectors]
            if ready:
                self.vectors[kind] = np.stack([vectors[h] for h in ready]).astype(np.float32)

    def vector_rows(self, kind: str) -> tuple[list[str], list[str], np.ndarray | None]:
        """(ids, hashes, vectors) of this write's records of a kind that have a vector."""
        ready = [(rid, h) for rid, h in self.records.get(kind, []) if h is not None]
        return [r for r, _ in ready], [h for _, h in ready], self.vectors.get(kind)

    def waiting(self, kind: str) -> list[str]:
        """Ids of this write's records of a kind stored without a vector."""
        return [rid for rid, h in self.records.get(kind, []) if h is None]

    # -- bytes ---------------------------------------------------------------------

    def to_bytes(self) -> bytes:
        meta = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "vectors"}
        buffer = io.BytesIO()
        np.savez(buffer, meta=np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8),
                 **{f"vectors_{kind}": matrix for kind, matrix in self.vectors.items()})
        return buffer.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes) -> Delta:
        with np.load(io.BytesIO(data), allow_pickle=False) as stored:
            meta = json.loads(stored["meta"].tobytes().decode("utf-8"))
            vectors = {name.removeprefix("vectors_"): stored[name] for name in stored.files if name != "meta"}
        delta = cls(**{**meta, "vectors": vectors})
        delta.passages = [tuple(p) for p in delta.passages]
        delta.facts = [tuple(f) for f in delta.facts]
        delta.mentions = [tuple(m) for m in delta.mentions]
        delta.synonyms = [tuple(s) for s in delta.synonyms]
        delta.records = {kind: [tuple(r) for r in rows] for kind, rows in delta.records.items()}
        return delta
