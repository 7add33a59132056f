"""Documents -> one WriteBatch: split, extract, normalize, embed, link synonyms.

Everything that can fail on bad input fails here, before the store is touched.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pydantic import ValidationError

from hippo.config import Settings
from hippo.embed import Embedder
from hippo.errors import InvalidInput
from hippo.extract.base import Extraction, Extractor
from hippo.graph.synonyms import synonym_edges
from hippo.ids import document_id, entity_id, fact_id, passage_id
from hippo.memory.state import DerivedState
from hippo.models import Document, DocumentRecord, Entity, Fact, Mention, Passage
from hippo.store.base import Store, WriteBatch, embed_hash, embed_text
from hippo.text import normalize, split_passages

Progress = Callable[[str, int, int], None]
"""Called as (stage, done, total)."""


@dataclass
class PreparedBatch:
    batch: WriteBatch
    vectors: dict[str, np.ndarray]  # every new record's vector, cached or fresh
    passages_unchanged: int = 0
    vectors_encoded: int = 0
    timings: dict[str, float] = field(default_factory=dict)


def validate_documents(documents: Iterable[Document | Mapping[str, Any] | str], settings: Settings,
                       space: str | None = None) -> list[Document]:
    """Parse and check every document; the first bad one raises, naming its field."""
    valid: list[Document] = []
    for i, raw in enumerate(documents):
        where = f"documents[{i}]"
        if isinstance(raw, str):
            raw = {"text": raw}
        try:
            doc = raw if isinstance(raw, Document) else Document.model_validate(raw)
        except ValidationError as exc:
            first = exc.errors()[0]
            loc = ".".join(str(x) for x in first["loc"])
            raise InvalidInput(f"{where}.{loc}" if loc else where, first["msg"]) from exc
        if space is not None:
            doc = doc.model_copy(update={"space": space})
        for name, value, limit in (("text", doc.text, settings.max_document_chars),
                                   ("title", doc.title, settings.max_title_chars)):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise InvalidInput(f"{where}.{name}", f"is not valid UTF-8 (at character {exc.start})") from exc
            if len(value) > limit:
                raise InvalidInput(f"{where}.{name}", f"has {len(value)} characters; the limit is {limit}",
                                   limit=limit)
        if not doc.text.strip():
            raise InvalidInput(f"{where}.text", "is empty")
        if not doc.space.strip():
            raise InvalidInput(f"{where}.space", "is empty")
        valid.append(doc)
    return valid


def split_documents(documents: list[Document], settings: Settings) -> tuple[list[DocumentRecord], list[Passage]]:
    records: dict[str, DocumentRecord] = {}
    passages: dict[str, Passage] = {}
    for doc in documents:
        doc_id = doc.id or document_id(doc.title, doc.text)
        records[doc_id] = DocumentRecord(id=doc_id, title=doc.title, source=doc.source, space=doc.space,
                                         meta=doc.meta)
        for n, chunk in enumerate(split_passages(doc.text, settings.passage_chars)):
            pid = passage_id(doc_id, chunk)
            passages.setdefault(pid, Passage(id=pid, doc_id=doc_id, index=n, title=doc.title,
                                             text=chunk, space=doc.space))
    return list(records.values()), list(passages.values())


def graph_records(passages: list[Passage], extractions: list[Extraction]
                  ) -> tuple[list[Entity], list[Fact], list[Mention]]:
    """Entities (deduplicated by normalized name), facts and mentions of new passages."""
    entities: dict[str, Entity] = {}
    facts: dict[str, Fact] = {}
    mentions: dict[tuple[str, str], Mention] = {}

    def entity(name: str, kind: str) -> Entity | None:
        key = normalize(name)
        if not key:
            return None  # never collapse unreadable names into one node
        eid = entity_id(key)
        if eid not in entities:
            entities[eid] = Entity(id=eid, name=" ".join(name.split()), key=key, type=kind)
        return entities[eid]

    for passage, extraction in zip(passages, extractions, strict=True):
        def mention(e: Entity | None) -> None:
            if e is not None:
                mentions.setdefault((passage.id, e.id), Mention(passage_id=passage.id, entity_id=e.id))

        for named in extraction.entities:
            mention(entity(named.name, named.type))
        for triple in extraction.triples:
            subject, obj = entity(triple.subject, "concept"), entity(triple.object, "concept")
            predicate = " ".join(triple.predicate.split())
            if subject is None or obj is None or subject.id == obj.id or not predicate:
                continue
            mention(subject)
            mention(obj)
            fid = fact_id(passage.id, subject.key, predicate, obj.key)
            facts.setdefault(fid, Fact(id=fid, subject_id=subject.id, predicate=predicate, object_id=obj.id,
                                       passage_id=passage.id, subject=triple.subject.strip(),
                                       object=triple.object.strip()))
    return list(entities.values()), list(facts.values()), list(mentions.values())


def embed_missing(records: list[Passage | Entity | Fact], store: Store, embedder: Embedder
                  ) -> tuple[dict[str, np.ndarray], list[str]]:
    """Vectors for every record by text hash: from the store's cache, else encoded
    once per distinct text. Also returns the hashes encoded now."""
    texts = {embed_hash(r): embed_text(r) for r in records}
    vectors = store.vectors(texts)
    missing = [h for h in texts if h not in vectors]
    # Similar lengths in one batch waste less padding.
    missing.sort(key=lambda h: len(texts[h]))
    encoded = embedder.encode([texts[h] for h in missing])
    vectors.update(zip(missing, encoded, strict=True))
    return vectors, missing


def prepare(documents: list[Document], *, store: Store, state: DerivedState, embedder: Embedder,
            extractor: Extractor, settings: Settings, progress: Progress | None = None) -> PreparedBatch:
    timings: dict[str, float] = {}
    clock = time.perf_counter()
    doc_records, passages = split_documents(documents, settings)
    stored = store.existing_ids(p.id for p in passages)
    new_passages = [p for p in passages if p.id not in stored]

    extractions: list[Extraction] = []
    step = 64
    for start in range(0, len(new_passages), step):
        extractions.extend(extractor.extract(new_passages[start : start + step]))
        if progress:
            progress("extract", min(start + step, len(new_passages)), len(new_passages))
    entities, facts, mentions = graph_records(new_passages, extractions)
    stored_entities = store.existing_ids(e.id for e in entities)
    new_entities = [e for e in entities if e.id not in stored_entities]
    timings["extract"] = time.perf_counter() - clock

    clock = time.perf_counter()
    if progress:
        progress("embed", 0, 1)
    vectors, fresh = embed_missing([*new_passages, *new_entities, *facts], store, embedder)
    if progress:
        progress("embed", 1, 1)
    timings["embed"] = time.perf_counter() - clock

    clock = time.perf_counter()
    new_vectors = np.stack([vectors[embed_hash(e)] for e in new_entities]) if new_entities else None
    synonyms = []
    if new_vectors is not None:
        all_ids = [*state.entities.ids, *(e.id for e in new_entities)]
        all_vectors = np.concatenate([state.entities.matrix, new_vectors])
        synonyms = synonym_edges(
            [e.id for e in new_entities], [e.key for e in new_entities], new_vectors, all_ids, all_vectors,
            threshold=settings.synonym_threshold, max_neighbors=settings.synonym_max_neighbors,
        )
    timings["graph"] = time.perf_counter() - clock

    batch = WriteBatch(
        documents=doc_records, passages=new_passages, entities=new_entities, facts=facts,
        mentions=mentions, synonyms=synonyms,
        vectors={h: vectors[h] for h in fresh},
    )
    return PreparedBatch(batch=batch, vectors=vectors, passages_unchanged=len(passages) - len(new_passages),
                         vectors_encoded=len(fresh), timings=timings)
