"""Documents -> one WriteBatch: split, extract, normalize, embed, link synonyms.

Everything that can fail on bad input fails here, before the store is touched.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from pydantic import ValidationError

from hippo.config import Settings
from hippo.documents.sections import split_document
from hippo.embed import Embedder
from hippo.errors import InvalidInput
from hippo.extract.base import Extraction, Extractor
from hippo.graph.synonyms import linkable, synonym_pairs
from hippo.ids import document_id, entity_id, fact_id, passage_id
from hippo.limits import check_depth
from hippo.memory.prefetch import Encode, Prefetched, VectorPrefetch
from hippo.models import Document, DocumentRecord, Entity, Fact, Mention, Passage, Synonym
from hippo.spaces import ORG, check_org_id, check_space, stored_id
from hippo.store.base import Store, WriteBatch, embed_hash, embed_text
from hippo.text import normalize

if TYPE_CHECKING:
    from hippo.memory.write_view import WriteView

Progress = Callable[[str, int, int], None]
"""Called as (stage, done, total)."""


@dataclass
class PreparedBatch:
    batch: WriteBatch
    vectors: dict[str, np.ndarray]  # every new record's vector, cached or fresh
    passages_unchanged: int = 0
    documents_updated: int = 0
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
        check_space(f"{where}.space", doc.space)
        check_depth(f"{where}.meta", doc.meta)
        valid.append(doc)
    return valid


def assign_ids(documents: list[Document], store: Store) -> list[Document]:
    """The documents with caller ids under the ids they are stored as: owned by their space
    (``hippo.spaces``). Idempotent; documents without an id keep none (it is derived)."""
    given = [doc.id for doc in documents if doc.id is not None]
    held = {(record.id, record.space) for record in store.documents(given)} if given else set()
    assigned = []
    for i, doc in enumerate(documents):
        if doc.id is None:
            assigned.append(doc)
            continue
        holds = (doc.id, doc.space) in held
        if doc.space == ORG:
            check_org_id(f"documents[{i}].id", doc.id, held=holds, title=doc.title, text=doc.text)
        assigned.append(doc.model_copy(update={"id": stored_id(doc.space, doc.id, held=holds)}))
    return assigned


def document_ids(documents: list[Document]) -> list[str]:
    """The stored id of each document (after ``assign_ids``), in order."""
    return [doc.id or document_id(doc.title, doc.text, doc.space) for doc in documents]


def split_documents(documents: list[Document], settings: Settings) -> tuple[list[DocumentRecord], list[Passage]]:
    """Records and first-version passages; a document id given twice keeps its last text."""
    records: dict[str, DocumentRecord] = {}
    passages: dict[str, list[Passage]] = {}
    for doc in documents:
        doc_id = doc.id or document_id(doc.title, doc.text, doc.space)
        records[doc_id] = DocumentRecord(id=doc_id, title=doc.title, source=doc.source, space=doc.space,
                                         meta=doc.meta)
        passages[doc_id] = document_passages(records[doc_id], doc.text, settings, version=1)
    return list(records.values()), [p for doc_id in records for p in passages[doc_id]]


def document_passages(record: DocumentRecord, text: str, settings: Settings, version: int) -> list[Passage]:
    """The passages of one version of a document (duplicate chunks once), split on its
    headings and pages (``hippo.documents.sections``)."""
    passages: dict[str, Passage] = {}
    for n, chunk in enumerate(split_document(text, settings.passage_chars)):
        pid = passage_id(record.id, chunk.text, version)
        passages.setdefault(pid, Passage(id=pid, doc_id=record.id, index=n, title=record.title, text=chunk.text,
                                         space=record.space, version=version, source=record.source,
                                         page=chunk.page, headings=list(chunk.headings)))
    return list(passages.values())


@dataclass
class Plan:
    """What an index call changes, before anything is extracted: the upsert by document id."""

    documents: list[DocumentRecord]
    passages: list[Passage]  # to add
    retire: list[str]  # live passages of older versions
    expect_versions: dict[str, int]
    passages_unchanged: int = 0
    documents_updated: int = 0


def plan_documents(documents: list[Document], store: Store, settings: Settings) -> Plan:
    """Version each document against the store.

    A new id is version 1. A stored, live document whose passages are the same
    is unchanged (re-indexing is a no-op). Anything else (new text, or a
    forgotten document indexed again) is the next version: its passages get
    new ids and the live ones of the version before are retired, in the same
    write. The versions read here are checked again inside that write.
    """
    records, first = split_documents(documents, settings)
    texts = {doc.id or document_id(doc.title, doc.text, doc.space): doc.text for doc in documents}
    stored = {d.id: d for d in store.documents([r.id for r in records])}
    history: dict[str, list[Passage]] = {}
    for p in store.document_passages(list(stored)) if stored else []:
        history.setdefault(p.doc_id, []).append(p)
    by_doc: dict[str, list[Passage]] = {}
    for p in first:
        by_doc.setdefault(p.doc_id, []).append(p)

    plan = Plan(documents=[], passages=[], retire=[], expect_versions={})
    for record in records:
        old = stored.get(record.id)
        plan.expect_versions[record.id] = old.version if old else 0
        if old is None:
            plan.documents.append(record)
            plan.passages.extend(by_doc[record.id])
            continue
        live = {p.id for p in history.get(record.id, []) if p.forgotten_at is None}
        current = document_passages(record, texts[record.id], settings, version=old.version)
        if old.forgotten_at is None and {p.id for p in current} == live:
            plan.documents.append(record.model_copy(update={"version": old.version, "kind": old.kind}))
            plan.passages_unchanged += len(current)
            continue
        version = old.version + 1
        plan.documents.append(record.model_copy(update={"version": version, "kind": old.kind}))
        plan.passages.extend(document_passages(record, texts[record.id], settings, version=version))
        plan.retire.extend(sorted(live))
        plan.documents_updated += 1
    return plan


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


EXTRACT_CHUNK = 64  # passages per extractor call; prefetched vectors follow each chunk


def embed_missing(records: list[Passage | Entity | Fact], store: Store, encode: Encode,
                  prefetched: Prefetched | None = None) -> tuple[dict[str, np.ndarray], list[str]]:
    """Vectors for every record by text hash: from a prefetch, else the store's cache, else
    encoded once per distinct text. Also returns the hashes encoded (now or by the prefetch).
    Encoded vectors come as the store keeps them (``Store.as_kept``): this process then holds
    what a process opening the store later reads."""
    texts = {embed_hash(r): embed_text(r) for r in records}
    known = prefetched.vectors if prefetched else {}
    vectors = {h: known[h] for h in texts if h in known}
    if vectors:
        vectors = dict(zip(vectors, store.as_kept(np.stack(list(vectors.values()))), strict=True))
    unknown = [h for h in texts if h not in vectors]
    if unknown:
        vectors.update(store.vectors(unknown))
    missing = [h for h in unknown if h not in vectors]
    # Similar lengths in one batch waste less padding.
    missing.sort(key=lambda h: len(texts[h]))
    if missing:
        vectors.update(zip(missing, store.as_kept(encode([texts[h] for h in missing])), strict=True))
    before = [h for h in texts if h in prefetched.encoded] if prefetched else []
    return vectors, before + missing


@dataclass
class Derived:
    """The graph records and vectors derived from new passages."""

    entities: list[Entity]  # new to the store
    facts: list[Fact]
    mentions: list[Mention]
    synonyms: list[Synonym]
    vectors: dict[str, np.ndarray]  # every vector known, by hash
    fresh: list[str]  # hashes encoded now
    embedded: bool = True  # False: encoding failed or timed out; records wait for a later embedding
    timings: dict[str, float] = field(default_factory=dict)


def derive(passages: list[Passage], *, store: Store, view: WriteView, encode: Encode, extractor: Extractor,
           settings: Settings, progress: Progress | None = None, tolerate_embedding_failure: bool = False) -> Derived:
    """Extract, embed and link synonyms for passages not stored yet; a call of several extraction
    chunks encodes beside the extractor (``hippo.memory.prefetch``).

    With ``tolerate_embedding_failure``, an encoder that raises (or times out)
    leaves the records without vectors instead of failing the call.
    """
    timings: dict[str, float] = {}
    clock = time.perf_counter()
    step = EXTRACT_CHUNK
    # One chunk (a memory, a small write) has little to overlap and stays on this thread.
    prefetch = VectorPrefetch(store, encode) if len(passages) > step else None
    extractions: list[Extraction] = []
    try:
        if prefetch:
            prefetch.submit(passages)
        for start in range(0, len(passages), step):
            chunk = passages[start : start + step]
            found = extractor.extract(chunk)
            extractions.extend(found)
            if prefetch:
                chunk_entities, chunk_facts, _ = graph_records(chunk, found)
                held = store.existing_ids(e.id for e in chunk_entities)
                prefetch.submit([*(e for e in chunk_entities if e.id not in held), *chunk_facts])
            if progress:
                progress("extract", min(start + step, len(passages)), len(passages))
        entities, facts, mentions = graph_records(passages, extractions)
        stored_entities = store.existing_ids(e.id for e in entities)
        new_entities = [e for e in entities if e.id not in stored_entities]
    except BaseException:
        if prefetch:
            prefetch.close()
        raise
    timings["extract"] = time.perf_counter() - clock

    clock = time.perf_counter()
    if progress:
        progress("embed", 0, 1)
    embedded = True
    records = [*passages, *new_entities, *facts]
    prefetched: Prefetched | None = None
    try:
        prefetched = prefetch.collect() if prefetch else None
        vectors, fresh = embed_missing(records, store, encode, prefetched)
    except Exception:
        if not tolerate_embedding_failure:
            raise
        vectors, fresh, embedded = store.vectors(embed_hash(r) for r in records), [], False
    if progress:
        progress("embed", 1, 1)
    # The wait after extraction: the part of encoding that extraction did not hide.
    timings["embed"] = time.perf_counter() - clock
    if prefetched is not None:
        timings["embed_overlapped"] = prefetched.busy_s

    clock = time.perf_counter()
    linkable = [e for e in new_entities if embed_hash(e) in vectors]
    synonyms = link_synonyms(linkable, vectors, view, settings)
    timings["graph"] = time.perf_counter() - clock
    return Derived(entities=new_entities, facts=facts, mentions=mentions, synonyms=synonyms, vectors=vectors,
                   fresh=fresh, embedded=embedded, timings=timings)


def link_synonyms(entities: list[Entity], vectors: dict[str, np.ndarray], view: WriteView,
                  settings: Settings) -> list[Synonym]:
    """Synonym edges between these entities (all with vectors) and every entity known: the
    stored ones the view finds nearest (every space), the batch's by brute force."""
    if not entities or settings.synonym_max_neighbors <= 0:
        return []
    queries = linkable([e.key for e in entities])
    if not queries:
        return []
    new_ids = [e.id for e in entities]
    new_vectors = np.stack([vectors[embed_hash(e)] for e in entities]).astype(np.float32)
    k = settings.synonym_max_neighbors + 1
    stored = view.entity_neighbours(new_vectors[queries], k, settings.synonym_threshold)
    wide = new_vectors.astype(np.float64)
    # Scores again in float64 from the vectors themselves: a pair gets the same score whichever of
    # its entities came first and whichever search found it (stores built in another order must
    # hold the same edges).
    batch = wide[queries] @ wide.T
    neighbours = []
    for row, (stored_ids, stored_vectors) in enumerate(stored):
        merged = np.concatenate([stored_vectors @ wide[queries[row]], batch[row]])
        merged_ids = stored_ids + new_ids
        head = np.argpartition(-merged, k - 1)[:k] if len(merged) > k else np.arange(len(merged))
        order = sorted(head.tolist(), key=lambda i: (-merged[i], merged_ids[i]))  # ties by id, not position
        neighbours.append((merged[order], [merged_ids[i] for i in order]))
    return synonym_pairs([new_ids[q] for q in queries], neighbours, threshold=settings.synonym_threshold,
                         max_neighbors=settings.synonym_max_neighbors)


def prepare(documents: list[Document], *, store: Store, view: WriteView, embedder: Embedder,
            extractor: Extractor, settings: Settings, progress: Progress | None = None) -> PreparedBatch:
    clock = time.perf_counter()
    plan = plan_documents(documents, store, settings)
    stored = store.existing_ids(p.id for p in plan.passages)
    new_passages = [p for p in plan.passages if p.id not in stored]
    planning = time.perf_counter() - clock
    derived = derive(new_passages, store=store, view=view, encode=embedder.encode, extractor=extractor,
                     settings=settings, progress=progress)
    derived.timings["extract"] += planning
    batch = WriteBatch(
        documents=plan.documents, passages=new_passages, entities=derived.entities, facts=derived.facts,
        mentions=derived.mentions, synonyms=derived.synonyms, vectors={h: derived.vectors[h] for h in derived.fresh},
        retire=plan.retire, retire_reason="superseded", expect_versions=plan.expect_versions,
    )
    return PreparedBatch(batch=batch, vectors=derived.vectors, passages_unchanged=plan.passages_unchanged,
                         documents_updated=plan.documents_updated, vectors_encoded=len(derived.fresh),
                         timings=derived.timings)


def batch_progress(progress: Progress, number: int, batches: int, size: int, documents: int) -> Progress:
    """Report a batch's stages as progress through the whole call."""

    def report(stage: str, done: int, total: int) -> None:
        if stage == "extract":  # counted in passages of this batch: scale to documents overall
            fraction = done / total if total else 1.0
            progress(stage, min(documents, round((number + fraction) * size)), documents)
        else:
            progress(stage, number + done, batches)

    return report
