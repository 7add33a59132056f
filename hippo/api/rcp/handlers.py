"""One function per protocol method: validated params in, a result object out.

Every handler reads through ``ctx.read_spaces`` (the caller's readable
spaces) and raises ``RcpError`` or an engine error that
``hippo.api.rcp.errors.translate`` maps to a code. Framing, the handshake and
capability gating are not here (``hippo.api.rcp.protocol``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from pydantic import ValidationError

from hippo.api.config import ServerSettings
from hippo.api.rcp import filters, wire
from hippo.api.rcp.context import Context
from hippo.api.rcp.errors import from_validation, invalid, too_large, unsupported
from hippo.api.rcp.memories import MemoryRecord, MemoryRegistry, new_memory_id, now
from hippo.api.rcp.params import (ForgetParams, GraphParams, HistoryParams, IndexAddParams, IndexDeleteParams,
                                  InputDocument, MemoriesParams, MemoryBuildParams, MemoryRecallParams, Params,
                                  RememberParams, RestoreParams, RetrieveParams)
from hippo.api.rcp.sessions import Session, Sessions, select
from hippo.memory import Memory
from hippo.memory.inputs import MAX_K as ENGINE_MAX_K
from hippo.memory.walk import MAX_HOPS
from hippo.models import DEFAULT_SPACE, Document, Hit
from hippo.spaces import session_space


class Service(Protocol):
    """What a handler uses of the server (``hippo.api.rcp.app.Service``, which registers the
    handlers): named here so this module never imports the app."""

    memory: Memory
    settings: ServerSettings
    memories: MemoryRegistry
    sessions: Sessions


P = TypeVar("P", bound=Params)
Handler = Callable[[Service, Context, dict[str, Any]], dict[str, Any]]

MODES = {"dense": "dense", "sparse": "bm25", "hybrid": "hybrid"}
GRAPH_OPS = ("local", "neighbors")
RRF_K = 60
TOKEN_COUNT = "approx_tokens: ceil(characters / 4) per entity name and per fact line"


def _parse(model: type[P], params: dict[str, Any]) -> P:
    try:
        return model.model_validate(params)
    except ValidationError as exc:
        raise from_validation(exc) from None


def _at_most(field: str, value: int | None, limit: int) -> None:
    if value is not None and value > limit:
        raise invalid(field, f"is {value}; the limit is {limit}", limit=limit)


def _ms(start: float) -> int:
    return round((time.perf_counter() - start) * 1000)


def _session(svc: Service, ctx: Context, session_id: str | None) -> Session | None:
    return svc.sessions.get(session_id, ctx) if session_id else None


def _owned(session: Session | None) -> list[str]:
    return [session_space(session.id)] if session is not None else []


def _space(p: Any, raw: dict[str, Any], ctx: Context) -> str | None:
    """The space a caller named; unnamed, an authenticated caller writes to their own space."""
    return p.space if "space" in raw or ctx.principal is None else None


def _documents(svc: Service, documents: list[InputDocument], space: str) -> list[Document]:
    limits, settings = svc.settings, svc.memory.settings
    if len(documents) > limits.max_documents:
        raise too_large("documents", f"has {len(documents)} documents; the limit is {limits.max_documents}",
                        limit=limits.max_documents)
    for i, doc in enumerate(documents):
        if len(doc.text) > settings.max_document_chars:
            raise too_large(f"documents[{i}].text", f"has {len(doc.text)} characters; the limit is "
                            f"{settings.max_document_chars}", limit=settings.max_document_chars)
        if not doc.text.strip():
            raise invalid(f"documents[{i}].text", "is empty")
    return [Document(id=d.id, title=d.title, text=d.text, source=d.source, meta=d.meta, space=space)
            for d in documents]


def _hits(svc: Service, hits: list[Hit], stage: str, include_text: bool = True) -> list[dict[str, Any]]:
    found = wire.sources(svc.memory.store, hits)
    return [wire.hit(h, found.get(h.id), score_stage=stage, include_text=include_text) for h in hits]


# -- retrieve ------------------------------------------------------------------------


def _unsupported_options(raw: dict[str, Any], mode: str, strict: bool, notes: list[str]) -> None:
    """Options the spec defines that hippo does not do: -32005, or a note when ``strict`` is false."""
    refused: list[tuple[str, str]] = []
    for name in ("mmr", "recency", "cursor", "indexVersion"):
        if name in raw:
            refused.append((name, "is not supported by this server"))
    for name in ("rerank", "rewrite"):
        if raw.get(name) not in (None, False):
            refused.append((name, "is not supported by this server"))
    if raw.get("includeVectors") is True:
        refused.append(("includeVectors", "vectors are not returned"))
    if raw.get("modality") not in (None, "text"):
        refused.append(("modality", "only text is served"))
    fusion = raw.get("fusion")
    if mode == "hybrid" and isinstance(fusion, dict):
        if fusion.get("method", "rrf") != "rrf":
            refused.append(("fusion.method", "only rrf is supported"))
        if fusion.get("rrfK", RRF_K) != RRF_K:
            refused.append(("fusion.rrfK", f"rrf runs with k = {RRF_K}"))
        if "weights" in fusion:
            refused.append(("fusion.weights", "rrf takes no weights"))
    for option, why in refused:
        if strict:
            raise unsupported(option, why)
        notes.append(f"ignored {option}: {why}")


def retrieve(svc: Service, ctx: Context, raw: dict[str, Any]) -> dict[str, Any]:
    start = time.perf_counter()
    p = _parse(RetrieveParams, raw)
    notes: list[str] = []
    mode = p.mode
    if mode not in MODES:
        if p.strict:
            raise unsupported("mode", f"{mode!r} is not one of {', '.join(MODES)}")
        notes.append(f"mode {mode!r} is not supported: served hybrid")
        mode = "hybrid"
    _unsupported_options(raw, mode, p.strict, notes)
    k = p.k
    if k > svc.settings.max_k:  # spec 7.7: clamp to maxK, never reject
        notes.append(f"k {k} clamped to maxK {svc.settings.max_k}")
        k = svc.settings.max_k
    session = _session(svc, ctx, p.session_id)
    tree = filters.validate(p.filter)
    spaces = ctx.read_spaces(session_id=session.id if session else None)
    seen = session.returned() if session else None
    narrowed = tree is not None or p.min_score is not None or bool(seen) or p.token_budget is not None
    pool = min(ENGINE_MAX_K, max(k * 4, 100) + len(seen or ())) if narrowed else k
    pool = min(ENGINE_MAX_K, max(pool, p.candidate_k or 0))
    found = ctx.scoped(svc.memory, _owned(session)).retrieve(p.query, k=pool, mode=MODES[mode], spaces=spaces)
    sources = wire.sources(svc.memory.store, found)

    def keep(h: Hit) -> bool:
        if p.min_score is not None and h.score < p.min_score:
            return False
        return filters.matches(tree, sources[h.id].record(h))

    chosen = select(found, k=k, token_budget=p.token_budget, keep=keep, seen=seen)
    if session is not None:
        session.remember(h.id for h in chosen)
    stage = {"dense": "dense", "sparse": "sparse", "hybrid": "rrf"}[mode]
    usage: dict[str, Any] = {"candidates": len(found), "latencyMs": _ms(start)}
    if notes:
        usage["notes"] = notes
    return {"hits": [wire.hit(h, sources.get(h.id), score_stage=stage, include_text=p.include_text)
                     for h in chosen], "usage": usage}


# -- graph ---------------------------------------------------------------------------


def _fused_seeds(explicit: list[str], from_query: dict[str, float]) -> dict[str, float]:
    """Named seeds weigh 1 each; a query's seeds are scaled to a maximum of 1; both halves mix equally."""
    if not from_query:
        return dict.fromkeys(explicit, 1.0)
    if not explicit:
        return from_query
    top = max(from_query.values()) or 1.0
    fused = {sid: 0.5 * w / top for sid, w in from_query.items()}
    for sid in explicit:
        fused[sid] = fused.get(sid, 0.0) + 0.5
    return fused


def graph(svc: Service, ctx: Context, raw: dict[str, Any]) -> dict[str, Any]:
    start = time.perf_counter()
    p = _parse(GraphParams, raw)
    if p.op not in GRAPH_OPS:
        raise unsupported("op", f"{p.op!r} is not one of this server's graph ops: {', '.join(GRAPH_OPS)}")
    _at_most("k", p.k, svc.settings.max_graph_k)
    _at_most("hops", p.hops, MAX_HOPS)
    if not p.seed_ids and not p.query:
        raise invalid("seedIds", f"op {p.op!r} needs seedIds or a query")
    session = _session(svc, ctx, p.session_id)
    spaces = ctx.read_spaces(session_id=session.id if session else None)
    meta: dict[str, Any] = {}
    query_seeds: dict[str, float] = {}
    recalled = None
    if p.query:
        seen_count = len(session.returned()) if session else 0
        hits_wanted = min(ENGINE_MAX_K, (p.k or 10) + seen_count) if not p.seed_ids and p.op == "local" else 1
        recalled = ctx.scoped(svc.memory, _owned(session)).recall(p.query, k=hits_wanted, spaces=spaces)
        query_seeds = {s.id: s.weight for s in recalled.seeds}
        meta["strategy"] = recalled.strategy

    if p.op == "neighbors":
        limit = p.k if "k" in raw else 50
        seeds = list(p.seed_ids) or list(query_seeds)
        around = ctx.scoped(svc.memory, _owned(session)).neighbors(seeds, spaces=spaces, hops=p.hops, limit=limit)
        meta["seeds"] = around.seeds
        return {"nodes": [{"id": n.id, "score": n.score, "kind": n.kind, "name": n.name, "seed": n.seed}
                          for n in around.nodes],
                "edges": [{"src": e.src, "dst": e.dst, "weight": e.weight, "kind": e.kind} for e in around.edges],
                "usage": {"latencyMs": _ms(start)}, "_meta": meta}

    k = p.k
    seen = session.returned() if session else None
    if recalled is not None and not p.seed_ids:
        found = recalled.hits
    else:
        pool = min(ENGINE_MAX_K, k + len(seen or ()))
        found = ctx.scoped(svc.memory, _owned(session)).walk(_fused_seeds(p.seed_ids, query_seeds), spaces=spaces,
                                                             k=pool)
    chosen = select(found, k=k, token_budget=p.token_budget, seen=seen)
    if session is not None:
        session.remember(h.id for h in chosen)
    return {"hits": _hits(svc, chosen, "ppr"), "usage": {"candidates": len(found), "latencyMs": _ms(start)},
            "_meta": meta}


# -- index ---------------------------------------------------------------------------


def index_add(svc: Service, ctx: Context, raw: dict[str, Any]) -> dict[str, Any]:
    p = _parse(IndexAddParams, raw)
    if p.chunk is False:
        raise unsupported("chunk", "hippo always splits long documents into passages")
    if p.contextual:
        raise unsupported("contextual", "contextual chunk headers are not supported")
    documents = _documents(svc, p.documents, DEFAULT_SPACE)
    result = ctx.scoped(svc.memory).index(documents)
    return {"ids": result.ids,
            "_meta": {"passagesAdded": result.passages_added, "passagesUnchanged": result.passages_unchanged}}


def index_delete(svc: Service, ctx: Context, raw: dict[str, Any]) -> dict[str, Any]:
    p = _parse(IndexDeleteParams, raw)
    if len(p.ids) > svc.settings.max_documents:
        raise too_large("ids", f"has {len(p.ids)} ids; the limit is {svc.settings.max_documents}",
                        limit=svc.settings.max_documents)
    return {"deleted": ctx.scoped(svc.memory).delete_documents(p.ids, reason="index/delete")}


# -- memory --------------------------------------------------------------------------


def memory_build(svc: Service, ctx: Context, raw: dict[str, Any]) -> dict[str, Any]:
    p = _parse(MemoryBuildParams, raw)
    documents = _documents(svc, p.documents, DEFAULT_SPACE) if p.documents else []
    if p.memory_id:
        record = svc.memories.get(p.memory_id, ctx)
        if p.scope and p.scope != record.scope:
            raise invalid("scope", f"memory {record.id} is {record.scope}-scoped, not {p.scope}")
        if p.session_id and p.session_id != record.session_id:
            raise invalid("sessionId", f"memory {record.id} does not belong to session {p.session_id}")
    else:
        scope = p.scope or ("session" if p.session_id else "global")
        if p.session_id and scope == "global":
            raise invalid("sessionId", "only a session-scoped memory belongs to a session")
        session = None
        if scope == "session":
            session = svc.sessions.get(p.session_id, ctx) if p.session_id else svc.sessions.create(ctx)
        memory_id = new_memory_id()
        if session is not None:
            home = session_space(session.id)
        else:
            home = f"memory:{memory_id}" if documents else DEFAULT_SPACE
        stamp = now()
        record = MemoryRecord(id=memory_id, scope=scope, spaces=[home] if documents else None, home=home,
                              session_id=session.id if session else None, owner=ctx.owner,
                              created_at=stamp, updated_at=stamp)
    added = 0
    if documents:
        added = ctx.scoped(svc.memory, [record.home]).index(
            [d.model_copy(update={"space": record.home}) for d in documents]).passages_added
    form = svc.memory.text_form(ctx.read_spaces(record.spaces, record.session_id, owned=record.spaces or ()))
    record = record.model_copy(update={"tokens": form.tokens, "entities": form.entities, "facts": form.facts,
                                       "revision": svc.memory.store.revision(), "updated_at": now()})
    svc.memories.save(record)
    result: dict[str, Any] = {"memoryId": record.id, "tokens": record.tokens}
    if record.session_id:
        result["sessionId"] = record.session_id
    result["_meta"] = {"scope": record.scope, "entities": form.entities, "facts": form.facts,
                       "passagesAdded": added, "tokenCount": TOKEN_COUNT}
    return result


def memory_recall(svc: Service, ctx: Context, raw: dict[str, Any]) -> dict[str, Any]:
    p = _parse(MemoryRecallParams, raw)
    _at_most("n", p.n, svc.settings.max_clues)
    _at_most("k", p.k, svc.settings.max_hits)
    session = _session(svc, ctx, p.session_id)
    record = svc.memories.get(p.memory_id, ctx) if p.memory_id else svc.memories.latest(
        ctx, session.id if session else None)
    if record is None:
        return {"clues": [{"query": p.query.strip(), "weight": 1.0, "x-hippo-kind": "query"}], "hits": [],
                "_meta": {"strategy": "no_memory",
                          "note": "no memory built yet (memory/build): the query itself is the only clue"}}
    if session is None and record.session_id:
        session = svc.sessions.get(record.session_id, ctx)
    seen = session.returned() if session else None
    pool = min(ENGINE_MAX_K, p.k + len(seen)) if seen else p.k
    result = ctx.scoped(svc.memory, [*(record.spaces or ()), *_owned(session)]).recall(
        p.query, n=p.n, k=pool,
        spaces=ctx.read_spaces(record.spaces, session.id if session else None, owned=record.spaces or ()))
    chosen = select(result.hits, k=p.k, token_budget=p.token_budget, seen=seen)
    if session is not None:
        session.remember(h.id for h in chosen)
    meta: dict[str, Any] = {"memoryId": record.id, "strategy": result.strategy, "timings": result.timings}
    if result.note:
        meta["note"] = result.note
    return {"clues": [wire.clue(c) for c in result.clues], "hits": _hits(svc, chosen, "ppr"), "_meta": meta}


# -- x-hippo: single memories, tombstones ------------------------------------------------


def _dump(model: Any) -> Any:
    if isinstance(model, list):
        return [_dump(m) for m in model]
    return model.model_dump(by_alias=True, mode="json")


def remember(svc: Service, ctx: Context, raw: dict[str, Any]) -> dict[str, Any]:
    p = _parse(RememberParams, raw)
    return _dump(ctx.scoped(svc.memory).remember(
        p.text, custom_id=p.custom_id, label=p.label, space=_space(p, raw, ctx), on_near_duplicate=p.on_near_duplicate,
        props=p.props, confidence=p.confidence, salience=p.salience, agent_id=p.agent_id))


def forget(svc: Service, ctx: Context, raw: dict[str, Any]) -> dict[str, Any]:
    p = _parse(ForgetParams, raw)
    if not p.uid and not p.custom_id:
        raise invalid("uid", "give uid or customId")
    scoped = ctx.scoped(svc.memory)
    return _dump(scoped.forget(p.uid, custom_id=p.custom_id, space=_space(p, raw, ctx), dry_run=p.dry_run,
                               cascade=p.cascade, reason=p.reason))


def restore(svc: Service, ctx: Context, raw: dict[str, Any]) -> dict[str, Any]:
    return _dump(ctx.scoped(svc.memory).restore(_parse(RestoreParams, raw).uid))


def history(svc: Service, ctx: Context, raw: dict[str, Any]) -> dict[str, Any]:
    p = _parse(HistoryParams, raw)
    if not p.uid and not p.custom_id:
        raise invalid("customId", "give customId or uid")
    return {"versions": _dump(ctx.scoped(svc.memory).history(p.custom_id, uid=p.uid, space=_space(p, raw, ctx)))}


def memories(svc: Service, ctx: Context, raw: dict[str, Any]) -> dict[str, Any]:
    p = _parse(MemoriesParams, raw)
    _at_most("limit", p.limit, 1000)
    spaces = ctx.read_spaces(p.spaces) if p.spaces is not None else ctx.read_spaces()
    return {"memories": _dump(ctx.scoped(svc.memory).memories(spaces=spaces, live=p.live, limit=p.limit))}


CORE: dict[str, Handler] = {
    "retrieve": retrieve,
    "graph": graph,
    "index/add": index_add,
    "index/delete": index_delete,
    "memory/build": memory_build,
    "memory/recall": memory_recall,
}

EXTENSIONS: dict[str, Handler] = {
    "x-hippo/remember": remember,
    "x-hippo/forget": forget,
    "x-hippo/restore": restore,
    "x-hippo/history": history,
    "x-hippo/memories": memories,
}
