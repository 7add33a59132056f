"""Small-text memory and the data lifecycle: remember, forget, restore, history.

A remembered memory is a one-passage document of kind ``memory`` in its
space, so everything that reads passages (recall, retrieve, keyword and
vector search, the graph) reads it too. Its id comes from the caller's
``custom_id`` (the idempotency key) or, without one, from its text. Versions
are passages: a new text is a new passage with the next version, and the
old one is retired (``superseded``) in the same write, kept as history.

Forgetting is a tombstone on the passages, never a delete: the facts and
entities derived from them leave the live graph because every read follows
live passages only, and ``restore`` brings them all back.
"""

from __future__ import annotations

import json
import math
import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from hippo.errors import AlreadyForgotten, Conflict, InvalidInput, NotForgotten, NotFound
from hippo.ids import memory_id, passage_id, text_hash
from hippo.memory.indexing import derive, embed_missing, link_synonyms
from hippo.models import (
    DocumentRecord,
    ForgetResult,
    ForgottenEntity,
    ForgottenFact,
    MemoryItem,
    MemoryVersion,
    NearDuplicate,
    Passage,
    RememberResult,
    RestoreResult,
)
from hippo.store.base import WriteBatch, embed_hash

if TYPE_CHECKING:
    from hippo.memory.engine import Memory

MAX_TEXT_BYTES = 8 * 1024
MAX_CUSTOM_ID_BYTES = 512
MAX_LABEL_CHARS = 80
MAX_INSTRUCTIONS_BYTES = 4 * 1024
MAX_SHORT_CHARS = 200  # space, agent id, reason
MAX_PROPS_BYTES = 16 * 1024
WRITE_ATTEMPTS = 8  # optimistic-concurrency retries against writers in other processes
INSTRUCTIONS = "remember-instructions"  # key-value namespace: space -> text
NearDuplicatePolicy = Literal["reuse", "create"]


# -- validation ------------------------------------------------------------------------


def _utf8(field: str, value: str, limit: int) -> int:
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise InvalidInput(field, f"is not valid UTF-8 (at character {exc.start})") from exc
    if size > limit:
        raise InvalidInput(field, f"has {size} bytes; the limit is {limit}", limit=limit)
    return size


def _text(field: str, value: Any, limit: int, *, empty_ok: bool = False) -> str:
    if not isinstance(value, str):
        raise InvalidInput(field, f"must be a string, got {type(value).__name__}")
    _utf8(field, value, limit)
    if not empty_ok and not value.strip():
        raise InvalidInput(field, "is empty")
    return value


def _unit(field: str, value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0 \
            or math.isnan(value):
        raise InvalidInput(field, f"must be a number from 0 to 1, got {value!r}", limit=1.0)
    return float(value)


def _props(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidInput("props", f"must be an object, got {type(value).__name__}")
    try:
        encoded = json.dumps(value, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInput("props", f"must be JSON-serializable: {exc}") from exc
    _utf8("props", encoded, MAX_PROPS_BYTES)
    return json.loads(encoded)


def default_label(text: str) -> str:
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return first if len(first) <= MAX_LABEL_CHARS else first[: MAX_LABEL_CHARS - 1] + "…"


def memory_uid(space: str, custom_id: str | None, text: str) -> str:
    return memory_id(space, f"id:{custom_id}") if custom_id is not None else memory_id(space, f"text:{text_hash(text)}")


# -- remember --------------------------------------------------------------------------


def remember(memory: Memory, text: str, *, custom_id: str | None = None, label: str | None = None,
             space: str = "org", on_near_duplicate: NearDuplicatePolicy = "reuse",
             props: dict[str, Any] | None = None, confidence: float | None = None, salience: float | None = None,
             agent_id: str | None = None) -> RememberResult:
    text = _text("text", text, MAX_TEXT_BYTES).strip()
    if custom_id is not None:
        custom_id = _text("custom_id", custom_id, MAX_CUSTOM_ID_BYTES)
    label = default_label(text) if label is None else _text("label", label, 4 * MAX_LABEL_CHARS)[:MAX_LABEL_CHARS]
    space = _text("space", space, MAX_SHORT_CHARS)
    if on_near_duplicate not in ("reuse", "create"):
        raise InvalidInput("on_near_duplicate", f"must be 'reuse' or 'create', got {on_near_duplicate!r}")
    if agent_id is not None:
        agent_id = _text("agent_id", agent_id, MAX_SHORT_CHARS)
    meta = {key: value for key, value in {
        "custom_id": custom_id, "props": _props(props), "confidence": _unit("confidence", confidence),
        "salience": _unit("salience", salience), "agent_id": agent_id,
    }.items() if value not in (None, {})}

    uid = memory_uid(space, custom_id, text)
    store = memory.store
    with memory._lock:
        for _ in range(WRITE_ATTEMPTS):
            state = memory._current()
            [old] = store.documents([uid]) or [None]
            live = [p for p in store.document_passages([uid]) if p.forgotten_at is None] if old else []
            if old is not None and old.forgotten_at is None and live and live[0].text == text:
                if custom_id is None and on_near_duplicate == "create":
                    uid, old, live = memory_id(space, f"text:{text_hash(text)}:{uuid.uuid4().hex}"), None, []
                else:
                    return _unchanged(memory, old, live[0], label, meta, reused=custom_id is None)
            version = old.version + 1 if old else 1
            record = DocumentRecord(id=uid, title=label, space=space, version=version, meta=meta, kind="memory")
            passage = Passage(id=passage_id(uid, text, version), doc_id=uid, text=text, space=space, version=version)
            derived = derive([passage], store=store, state=state, encode=memory._bounded_encode,
                             extractor=memory.extractor, settings=memory.settings, tolerate_embedding_failure=True)
            batch = WriteBatch(
                documents=[record], passages=[passage], entities=derived.entities, facts=derived.facts,
                mentions=derived.mentions, synonyms=derived.synonyms,
                vectors={h: derived.vectors[h] for h in derived.fresh},
                retire=[p.id for p in live], retire_reason="superseded",
                expect_versions={uid: old.version if old else 0},
            )
            try:
                memory._commit(batch, derived.vectors, state)
            except Conflict:
                continue
            vector = derived.vectors.get(embed_hash(passage))
            if not derived.embedded or vector is None:
                memory._background.wake()
            return RememberResult(
                uid=uid, custom_id=custom_id, action="updated" if old else "inserted", label=label, version=version,
                space=space, embedded=vector is not None, searchable={"bm25": True, "vector": vector is not None},
                near_duplicates=_near_duplicates(memory, vector, space, exclude={passage.id}),
                instructions=get_instructions(memory, space),
            )
    raise Conflict(f"memory {uid} kept changing under concurrent writers ({WRITE_ATTEMPTS} attempts)")


def _unchanged(memory: Memory, record: DocumentRecord, passage: Passage, label: str, meta: dict[str, Any],
               *, reused: bool) -> RememberResult:
    """Same text: nothing new to derive. A new label or new props still update the record."""
    if not reused and (record.title, record.meta) != (label, meta):
        updated = record.model_copy(update={"title": label, "meta": meta})
        memory._commit(WriteBatch(documents=[updated], expect_versions={record.id: record.version}), {},
                       memory._current())
        record = updated
    state = memory._current()
    embedded = ("passage", passage.id) not in state.unembedded and passage.id in state.projection.vertex
    vector = None
    if embedded:
        stored = memory.store.vectors([embed_hash(passage)])
        vector = stored.get(embed_hash(passage))
    return RememberResult(
        uid=record.id, custom_id=record.meta.get("custom_id"), action="reused" if reused else "unchanged",
        label=record.title, version=record.version, space=record.space, embedded=vector is not None,
        searchable={"bm25": True, "vector": vector is not None},
        near_duplicates=_near_duplicates(memory, vector, record.space, exclude={passage.id}),
        instructions=get_instructions(memory, record.space),
    )


def _near_duplicates(memory: Memory, vector: np.ndarray | None, space: str, exclude: set[str],
                     limit: int = 5) -> list[NearDuplicate]:
    """Live passages of the space whose meaning is close: listed for the caller, never acted on."""
    if vector is None:
        return []
    close = []
    with memory.reading() as state:
        projection = state.projection
        code = projection.view(frozenset({space})).codes
        # The space's own shard holds exactly its live passages: its nearest are the candidates.
        (sims, vertices), = state.passages.search(vector, limit + len(exclude), code)
        for similarity, v in zip(sims.tolist(), vertices.tolist(), strict=True):
            pid = projection.record_ids[v]
            if similarity >= memory.settings.near_duplicate_threshold and pid not in exclude:
                close.append((pid, float(similarity)))
                if len(close) == limit:
                    break
    passages = {p.id: p for p in memory.store.passages(pid for pid, _ in close)}
    documents = {d.id: d for d in memory.store.documents({p.doc_id for p in passages.values()})}
    found = []
    for pid, similarity in close:
        doc = documents.get(passages[pid].doc_id) if pid in passages else None
        if doc is not None:
            found.append(NearDuplicate(uid=doc.id, label=doc.title or default_label(passages[pid].text),
                                       similarity=round(similarity, 4)))
    return found


# -- forget and restore ----------------------------------------------------------------


def _resolve(memory: Memory, uid: str) -> tuple[DocumentRecord | None, list[Passage]]:
    """The document named (with all its passages), or the single passage named."""
    [doc] = memory.store.documents([uid]) or [None]
    if doc is not None:
        return doc, memory.store.document_passages([uid])
    passages = memory.store.passages([uid])
    if not passages:
        raise NotFound(f"uid {uid!r}: no memory, document or passage has this id")
    return None, passages


def _target_uid(uid: str | None, custom_id: str | None, space: str) -> str:
    if (uid is None) == (custom_id is None):
        raise InvalidInput("uid", "give exactly one of uid and custom_id")
    if custom_id is not None:
        space = _text("space", space, MAX_SHORT_CHARS)
        return memory_uid(space, _text("custom_id", custom_id, MAX_CUSTOM_ID_BYTES), "")
    return _text("uid", uid, MAX_CUSTOM_ID_BYTES)


def forget(memory: Memory, uid: str | None = None, *, custom_id: str | None = None, space: str = "org",
           dry_run: bool = False, cascade: bool = True, reason: str | None = None) -> ForgetResult:
    uid = _target_uid(uid, custom_id, space)
    if reason is not None:
        reason = _text("reason", reason, MAX_SHORT_CHARS)
    with memory._lock:
        state = memory._current()
        doc, passages = _resolve(memory, uid)
        live = [p for p in passages if p.forgotten_at is None]
        if (doc is not None and doc.forgotten_at is not None) or not live:
            raise AlreadyForgotten(f"uid {uid!r} is already forgotten; restore it with restore({uid!r})")
        impact = state.projection.impact([p.id for p in live])
        if not cascade and (impact.facts or impact.entities):
            raise InvalidInput("cascade", f"forgetting {uid} would also retire {len(impact.facts)} facts and "
                                          f"{len(impact.entities)} entities; pass cascade=True, or dry_run=True "
                                          "to list them")
        result = ForgetResult(
            uid=uid, kind=doc.kind if doc is not None else "passage", dry_run=dry_run, reason=reason,
            passages=[p.id for p in live],
            facts=[ForgottenFact(id=f.id, text=f.text) for f in memory.store.facts(impact.facts)],
            entities=[ForgottenEntity(id=e.id, name=e.name) for e in memory.store.entities(impact.entities)],
            edges=impact.edges, undo={"method": "restore", "uid": uid},
        )
        if dry_run:
            return result
        now = datetime.now(UTC)
        documents = [] if doc is None else [doc.model_copy(update={"forgotten_at": now,
                                                                    "forgotten_reason": reason or "forgotten"})]
        memory._commit(WriteBatch(documents=documents, retire=result.passages, retire_reason=reason or "forgotten",
                                  retire_at=now), {}, state)
        return result


def restore(memory: Memory, uid: str) -> RestoreResult:
    uid = _text("uid", uid, MAX_CUSTOM_ID_BYTES)
    with memory._lock:
        state = memory._current()
        doc, passages = _resolve(memory, uid)
        if doc is not None:
            if doc.forgotten_at is None:
                raise NotForgotten(f"uid {uid!r} is not forgotten: nothing to restore")
            back = [p for p in passages if p.version == doc.version and p.forgotten_at is not None]
            documents = [doc.model_copy(update={"forgotten_at": None, "forgotten_reason": None})]
        else:
            [passage] = passages
            if passage.forgotten_at is None:
                raise NotForgotten(f"uid {uid!r} is not forgotten: nothing to restore")
            if passage.forgotten_reason == "superseded":
                raise NotForgotten(f"uid {uid!r} was superseded by a newer version of {passage.doc_id}; "
                                   "remember or index that text again to bring it back")
            back, documents = [passage], []
        memory._commit(WriteBatch(documents=documents, revive=[p.id for p in back]), {}, state)
        entities = memory._current().projection.impact([p.id for p in back]).entities
    return RestoreResult(uid=uid, passages=[p.id for p in back], entities=len(entities))


def delete_documents(memory: Memory, ids: list[str], *, reason: str | None = None) -> int:
    """Tombstone documents (and memories) by id in one write; absent or forgotten ids count 0."""
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        raise InvalidInput("ids", "must be a list of strings")
    reason = reason or "deleted"
    with memory._lock:
        state = memory._current()
        docs = [d for d in memory.store.documents(ids) if d.forgotten_at is None]
        if not docs:
            return 0
        now = datetime.now(UTC)
        retire = [p.id for p in memory.store.document_passages([d.id for d in docs]) if p.forgotten_at is None]
        memory._commit(WriteBatch(
            documents=[d.model_copy(update={"forgotten_at": now, "forgotten_reason": reason}) for d in docs],
            retire=retire, retire_reason=reason, retire_at=now,
            expect_versions={d.id: d.version for d in docs}), {}, state)
        return len(docs)


# -- reading memories ------------------------------------------------------------------


def history(memory: Memory, custom_id: str | None = None, *, uid: str | None = None,
            space: str = "org") -> list[MemoryVersion]:
    uid = _target_uid(uid, custom_id, space)
    doc, passages = _resolve(memory, uid)
    if doc is None:
        raise NotFound(f"uid {uid!r} is a passage, not a memory or document")
    versions: dict[int, list[Passage]] = {}
    for p in passages:
        versions.setdefault(p.version, []).append(p)
    found = []
    for version, parts in sorted(versions.items()):
        parts.sort(key=lambda p: p.index)
        first = parts[0]
        state = "live" if first.forgotten_at is None else (
            "superseded" if first.forgotten_reason == "superseded" else "forgotten")
        found.append(MemoryVersion(version=version, text="\n\n".join(p.text for p in parts), state=state,
                                   created_at=first.created_at, retired_at=first.forgotten_at))
    return found


def memories(memory: Memory, *, spaces: frozenset[str] | None = None, live: bool = True,
             limit: int = 1000) -> list[MemoryItem]:
    docs = memory.store.find_documents(spaces=spaces, kind="memory", live=live, limit=limit)
    current: dict[str, Passage] = {}
    for p in memory.store.document_passages([d.id for d in docs]):
        if p.doc_id not in current or p.version >= current[p.doc_id].version:
            current[p.doc_id] = p
    items = []
    for d in docs:
        passage = current.get(d.id)
        if passage is None:
            continue
        items.append(MemoryItem(
            uid=d.id, custom_id=d.meta.get("custom_id"), label=d.title, text=passage.text, space=d.space,
            version=d.version, created_at=passage.created_at, props=d.meta.get("props", {}),
            confidence=d.meta.get("confidence"), salience=d.meta.get("salience"), agent_id=d.meta.get("agent_id"),
        ))
    return items


# -- remember instructions -------------------------------------------------------------


def set_instructions(memory: Memory, text: str, space: str = "org") -> None:
    text = _text("text", text, MAX_INSTRUCTIONS_BYTES, empty_ok=True)
    space = _text("space", space, MAX_SHORT_CHARS)
    memory.store.put_values(INSTRUCTIONS, {space: text.strip() or None})


def get_instructions(memory: Memory, space: str = "org") -> str | None:
    return memory.store.get_values(INSTRUCTIONS, [space]).get(space)


# -- the background embedding ----------------------------------------------------------


def embed_pending(memory: Memory, limit: int = 256) -> bool:
    """Embed records written without vectors; True when none are left."""
    with memory._lock:
        state = memory._current()
        pending = sorted(state.unembedded)[:limit]
    if not pending:
        return True
    by_kind = {kind: [rid for k, rid in pending if k == kind] for kind in ("passage", "entity", "fact")}
    store = memory.store
    records = [*store.passages(by_kind["passage"]), *store.entities(by_kind["entity"]), *store.facts(by_kind["fact"])]
    vectors, fresh = embed_missing(records, store, memory.embedder.encode)  # no deadline here
    with memory._lock:
        state = memory._current()
        waiting = [r for r in records if (_kind(r), r.id) in state.unembedded]
        entities = [r for r in waiting if _kind(r) == "entity"]
        synonyms = link_synonyms(entities, vectors, state, memory.settings)
        batch = WriteBatch(passages=[r for r in waiting if _kind(r) == "passage"], entities=entities,
                           facts=[r for r in waiting if _kind(r) == "fact"], synonyms=synonyms,
                           vectors={h: vectors[h] for h in fresh})
        memory._commit(batch, vectors, state, late=waiting)
        return not memory._current().unembedded


def _kind(record: object) -> str:
    return type(record).__name__.lower()
