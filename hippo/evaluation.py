"""Recall@k of gold documents, the measure HippoRAG reports."""

from __future__ import annotations

from collections.abc import Iterable

from hippo.models import Hit


def top_documents(hits: Iterable[Hit], k: int) -> list[str]:
    """The first ``k`` distinct documents among ranked hits (a long document may span passages)."""
    docs: list[str] = []
    for hit in hits:
        if hit.doc_id and hit.doc_id not in docs:
            docs.append(hit.doc_id)
            if len(docs) == k:
                break
    return docs


def recall_at(hits: list[Hit], gold: set[str], k: int) -> float:
    if not gold:
        return 0.0
    return len(set(top_documents(hits, k)) & gold) / len(gold)
