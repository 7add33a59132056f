"""Engine results -> the protocol's shapes: Hit (spec 7.7) and Clue objects."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from hippo.models import Clue, DocumentRecord, Hit, Passage
from hippo.store import Store
from hippo.text import approx_tokens


@dataclass(frozen=True)
class Source:
    """What a hit needs from the store beyond the engine's ``Hit``: chunk index and document."""

    passage: Passage | None
    document: DocumentRecord | None

    def record(self, hit: Hit) -> dict[str, Any]:
        """The fields a metadata filter sees (see ``hippo.server.filters``)."""
        doc = self.document
        return {"docId": hit.doc_id, "title": hit.title, "space": hit.space,
                "source": doc.source if doc else None, "kind": doc.kind if doc else "document",
                "meta": doc.meta if doc else {}}


def sources(store: Store, hits: Iterable[Hit]) -> dict[str, Source]:
    hits = list(hits)
    passages = {p.id: p for p in store.passages(h.id for h in hits)}
    documents = {d.id: d for d in store.documents({h.doc_id for h in hits if h.doc_id})}
    return {h.id: Source(passages.get(h.id), documents.get(h.doc_id or "")) for h in hits}


def hit(h: Hit, source: Source | None, *, score_stage: str, include_text: bool = True) -> dict[str, Any]:
    """One protocol Hit. ``confidence`` is the query's cosine with the passage (0-1), when known,
    so it compares across calls; ``score`` is the stage's own scale (PPR mass, cosine, BM25 or RRF)."""
    out: dict[str, Any] = {"id": h.id, "score": h.score, "unit": "passage"}
    if include_text:
        out["text"] = h.text
    scores = dict(h.scores)
    scores.setdefault(score_stage, h.score)
    out["scores"] = scores
    if "dense" in scores:
        out["confidence"] = round(min(1.0, max(0.0, scores["dense"])), 6)
    doc = source.document if source else None
    out["citation"] = citation(h, doc)
    if h.doc_id:
        out["chunk"] = {"docId": h.doc_id, "index": source.passage.index if source and source.passage else 0}
    if h.provenance.nodes or h.provenance.facts:
        out["provenance"] = {"nodes": list(h.provenance.nodes), "edges": list(h.provenance.facts)}
    out["meta"] = {**(doc.meta if doc else {}), "space": h.space, "title": h.title}
    # Spec 15.2: retrieved text is data, never instructions; nothing here is vetted.
    out["trust"] = {"level": "untrusted"}
    return out


def citation(h: Hit, doc: DocumentRecord | None) -> dict[str, Any]:
    """Where a hit's text comes from: the source (a file path when read from a file, else the
    document id), its title, and for documents read by ``hippo.documents`` the page the passage
    starts on and the headings above it."""
    out: dict[str, Any] = {"source": h.source or (doc.source if doc and doc.source else h.doc_id) or h.id,
                           "title": h.title}
    if h.page is not None:
        out["page"] = h.page
    if h.headings:
        out["headings"] = list(h.headings)
    return out


def clue(c: Clue) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if c.query:
        out["query"] = c.query
    if c.seed_ids:
        out["seedIds"] = list(c.seed_ids)
    if c.weight is not None:
        out["weight"] = c.weight
    out["x-hippo-kind"] = c.kind
    return out


def tokens(text: str) -> int:
    """The token estimate ``tokenBudget`` counts in (about four characters a token)."""
    return approx_tokens(text)
