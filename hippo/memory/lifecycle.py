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

import uuid
from datetime import UTC, datetime
from typing import Any, Literal

import numpy as np

from hippo.errors import AlreadyForgotten, InvalidInput, NotForgotten, NotFound
from hippo.extract import Extractor
from hippo.ids import memory_id, passage_id, text_hash
from hippo.memory import inputs
from hippo.memory.core import Engine, Planned
from hippo.memory.indexing import derive
from hippo.memory.inputs import (
    MAX_CUSTOM_ID_BYTES,
    MAX_INSTRUCTIONS_BYTES,
    MAX_LABEL_CHARS,
    MAX_SHORT_CHARS,
    MAX_TEXT_BYTES,
    MAX_UID_BYTES,
    default_label,
    memory_uid,
    target_uid,
)
from hippo.memory.retry import Reused
from hippo.memory.write_view import WriteView
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
from hippo.spaces import check_space
from hippo.store.base import Spaces, Store, WriteBatch, embed_hash

INSTRUCTIONS = "remember-instructions"  # key-value namespace: space -> text
NearDuplicatePolicy = Literal["reuse", "create"]


# -- remember --------------------------------------------------------------------------


def remember(engine: Engine, extractor: Extractor, text: str, *, custom_id: str | None = None,
             label: str | None = None, space: str = "org", on_near_duplicate: NearDuplicatePolicy = "reuse",
             props: dict[str, Any] | None = None, confidence: float | None = None, salience: float | None = None,
             agent_id: str | None = None) -> RememberResult:
    text = inputs.text("text", text, MAX_TEXT_BYTES).strip()
    if custom_id is not None:
        custom_id = inputs.text("custom_id", custom_id, MAX_CUSTOM_ID_BYTES)
    label = default_label(text) if label is None else inputs.text("label", label, 4 * MAX_LABEL_CHARS)[:MAX_LABEL_CHARS]
    space = check_space("space", space)
    if on_near_duplicate not in ("reuse", "create"):
        raise InvalidInput("on_near_duplicate", f"must be 'reuse' or 'create', got {on_near_duplicate!r}")
    if agent_id is not None:
        agent_id = inputs.text("agent_id", agent_id, MAX_SHORT_CHARS)
    meta = {key: value for key, value in {
        "custom_id": custom_id, "props": inputs.props(props), "confidence": inputs.unit("confidence", confidence),
        "salience": inputs.unit("salience", salience), "agent_id": agent_id,
    }.items() if value not in (None, {})}

    uid = memory_uid(space, custom_id, text)
    store = engine.store
    reused = Reused(extractor, engine.encode_bounded)

    def plan(view: WriteView) -> Planned[RememberResult]:
        nonlocal uid  # a "create" keeps the fresh id it drew across the attempts
        [old] = store.documents([uid]) or [None]
        if old is not None and old.space != space:
            # Written before ids were owned by their space: never adopt another space's record.
            raise InvalidInput("custom_id", f"the id of this memory ({uid}) is held by a record of another "
                                            "space; choose another custom_id")
        live = [p for p in store.document_passages([uid]) if p.forgotten_at is None] if old else []
        if old is not None and old.forgotten_at is None and live and live[0].text == text:
            if custom_id is None and on_near_duplicate == "create":
                uid, old, live = memory_id(space, f"text:{text_hash(text)}:{uuid.uuid4().hex}"), None, []
            else:
                return _unchanged(engine, old, live[0], label, meta, reused=custom_id is None)
        version = old.version + 1 if old else 1
        record = DocumentRecord(id=uid, title=label, space=space, version=version, meta=meta, kind="memory")
        passage = Passage(id=passage_id(uid, text, version), doc_id=uid, text=text, space=space, version=version)
        derived = derive([passage], store=store, view=view, encode=reused.encode, extractor=reused,
                         settings=engine.settings, tolerate_embedding_failure=True)
        batch = WriteBatch(
            documents=[record], passages=[passage], entities=derived.entities, facts=derived.facts,
            mentions=derived.mentions, synonyms=derived.synonyms,
            vectors={h: derived.vectors[h] for h in derived.fresh},
            retire=[p.id for p in live], retire_reason="superseded",
            expect_versions={uid: old.version if old else 0},
        )

        def result(_: int) -> RememberResult:
            vector = derived.vectors.get(embed_hash(passage))
            if not derived.embedded or vector is None:
                engine.background.wake()
            return RememberResult(
                uid=record.id, custom_id=custom_id, action="updated" if old else "inserted", label=label,
                version=version, space=space, embedded=vector is not None,
                searchable={"bm25": True, "vector": vector is not None},
                near_duplicates=_near_duplicates(engine, vector, space, exclude={passage.id}),
                instructions=get_instructions(engine.store, space),
            )
        return Planned(batch, result, derived.vectors)

    # Each backoff sleeps outside the lock: this process's other writers go on.
    return engine.write(plan, what=f"memory {uid}")


def _unchanged(engine: Engine, record: DocumentRecord, passage: Passage, label: str, meta: dict[str, Any],
               *, reused: bool) -> Planned[RememberResult]:
    """Same text: nothing new to derive. A new label or new props still update the record."""
    batch = None
    if not reused and (record.title, record.meta) != (label, meta):
        record = record.model_copy(update={"title": label, "meta": meta})
        batch = WriteBatch(documents=[record], expect_versions={record.id: record.version})

    def result(_: int) -> RememberResult:
        vector = engine.view().vector_of(passage)
        return RememberResult(
            uid=record.id, custom_id=record.meta.get("custom_id"), action="reused" if reused else "unchanged",
            label=record.title, version=record.version, space=record.space, embedded=vector is not None,
            searchable={"bm25": True, "vector": vector is not None},
            near_duplicates=_near_duplicates(engine, vector, record.space, exclude={passage.id}),
            instructions=get_instructions(engine.store, record.space),
        )
    return Planned(batch, result)


def _near_duplicates(engine: Engine, vector: np.ndarray | None, space: str, exclude: set[str],
                     limit: int = 5) -> list[NearDuplicate]:
    """Live passages of the space whose meaning is close: listed for the caller, never acted on."""
    if vector is None:
        return []
    close = [(pid, similarity) for pid, similarity in engine.view().near_passages(vector, space, limit + len(exclude))
             if similarity >= engine.settings.near_duplicate_threshold and pid not in exclude][:limit]
    passages = {p.id: p for p in engine.store.passages(pid for pid, _ in close)}
    documents = {d.id: d for d in engine.store.documents({p.doc_id for p in passages.values()})}
    found = []
    for pid, similarity in close:
        doc = documents.get(passages[pid].doc_id) if pid in passages else None
        if doc is not None:
            found.append(NearDuplicate(uid=doc.id, label=doc.title or default_label(passages[pid].text),
                                       similarity=round(similarity, 4)))
    return found


# -- forget and restore ----------------------------------------------------------------


def _resolve(store: Store, uid: str, space: str | None = None) -> tuple[DocumentRecord | None, list[Passage]]:
    """The document named (with all its passages), or the single passage named.

    ``space``: the memory was named by custom id in that space; a record of another space is not it.
    """
    [doc] = store.documents([uid]) or [None]
    if doc is not None and (space is None or doc.space == space):
        return doc, store.document_passages([uid])
    passages = store.passages([uid]) if space is None else []
    if not passages:
        raise NotFound(f"uid {uid!r}: no memory, document or passage has this id")
    return None, passages


def forget(engine: Engine, uid: str | None = None, *, custom_id: str | None = None, space: str = "org",
           dry_run: bool = False, cascade: bool = True, reason: str | None = None,
           spaces: Spaces = None) -> ForgetResult:
    """``spaces``: what the caller may read; the facts, entities and edges reported are those
    leaving that view (everything, for None)."""
    uid, named_in = target_uid(uid, custom_id, space)
    if reason is not None:
        reason = inputs.text("reason", reason, MAX_SHORT_CHARS)
    store = engine.store

    def plan(view: WriteView) -> Planned[ForgetResult]:
        doc, passages = _resolve(store, uid, named_in)
        live = [p for p in passages if p.forgotten_at is None]
        if (doc is not None and doc.forgotten_at is not None) or not live:
            raise AlreadyForgotten(f"uid {uid!r} is already forgotten; restore it with restore({uid!r})")
        impact = view.impact([p.id for p in live], spaces)
        if not cascade and (impact.facts or impact.entities):
            raise InvalidInput("cascade", f"forgetting {uid} would also retire {len(impact.facts)} facts and "
                                          f"{len(impact.entities)} entities; pass cascade=True, or dry_run=True "
                                          "to list them")
        result = ForgetResult(
            uid=uid, kind=doc.kind if doc is not None else "passage", dry_run=dry_run, reason=reason,
            passages=[p.id for p in live],
            facts=[ForgottenFact(id=f.id, text=f.text) for f in store.facts(impact.facts)],
            entities=[ForgottenEntity(id=e.id, name=e.name) for e in store.entities(impact.entities)],
            edges=impact.edges, undo={"method": "restore", "uid": uid},
        )
        if dry_run:
            return Planned(None, lambda _: result)
        now = datetime.now(UTC)
        documents = [] if doc is None else [doc.model_copy(update={"forgotten_at": now,
                                                                    "forgotten_reason": reason or "forgotten"})]
        return Planned(WriteBatch(documents=documents, retire=result.passages, retire_reason=reason or "forgotten",
                                  retire_at=now), lambda _: result)

    return engine.write(plan)


def restore(engine: Engine, uid: str, spaces: Spaces = None) -> RestoreResult:
    """``spaces``: what the caller may read; ``entities`` counts those that come back into that view."""
    uid = inputs.text("uid", uid, MAX_UID_BYTES)

    def plan(view: WriteView) -> Planned[RestoreResult]:
        doc, passages = _resolve(engine.store, uid)
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

        def result(_: int) -> RestoreResult:
            entities = engine.view().impact([p.id for p in back], spaces).entities
            return RestoreResult(uid=uid, passages=[p.id for p in back], entities=len(entities))
        return Planned(WriteBatch(documents=documents, revive=[p.id for p in back]), result)

    return engine.write(plan)


def delete_documents(engine: Engine, ids: list[str], *, reason: str | None = None) -> int:
    """Tombstone documents (and memories) by id in one write; absent or forgotten ids count 0."""
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        raise InvalidInput("ids", "must be a list of strings")
    reason = reason or "deleted"
    store = engine.store

    def plan(_: WriteView) -> Planned[int]:
        docs = [d for d in store.documents(ids) if d.forgotten_at is None]
        if not docs:
            return Planned(None, lambda _: 0)
        now = datetime.now(UTC)
        retire = [p.id for p in store.document_passages([d.id for d in docs]) if p.forgotten_at is None]
        return Planned(WriteBatch(
            documents=[d.model_copy(update={"forgotten_at": now, "forgotten_reason": reason}) for d in docs],
            retire=retire, retire_reason=reason, retire_at=now,
            expect_versions={d.id: d.version for d in docs}), lambda _: len(docs))

    return engine.write(plan)


# -- reading memories ------------------------------------------------------------------


def history(store: Store, custom_id: str | None = None, *, uid: str | None = None,
            space: str = "org") -> list[MemoryVersion]:
    uid, named_in = target_uid(uid, custom_id, space)
    doc, passages = _resolve(store, uid, named_in)
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


def memories(store: Store, *, spaces: frozenset[str] | None = None, live: bool = True,
             limit: int = 1000) -> list[MemoryItem]:
    docs = store.find_documents(spaces=spaces, kind="memory", live=live, limit=limit)
    current: dict[str, Passage] = {}
    for p in store.document_passages([d.id for d in docs]):
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


def set_instructions(store: Store, text: str, space: str = "org") -> None:
    text = inputs.text("text", text, MAX_INSTRUCTIONS_BYTES, empty_ok=True)
    space = check_space("space", space)
    store.put_values(INSTRUCTIONS, {space: text.strip() or None})


def get_instructions(store: Store, space: str = "org") -> str | None:
    return store.get_values(INSTRUCTIONS, [space]).get(space)
