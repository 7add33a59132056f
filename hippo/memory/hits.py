"""Turn a ranking of passage ids into hits: dedup, cap by count and by tokens."""

from __future__ import annotations

from collections.abc import Callable

from hippo.models import Hit, Passage, Provenance
from hippo.text import approx_tokens


def assemble_hits(
    ranking: list[tuple[str, float]],
    passages: dict[str, Passage],
    *,
    k: int,
    token_budget: int | None = None,
    stage_scores: Callable[[str], dict[str, float]] = lambda _: {},
    provenance: Callable[[str], Provenance] = lambda _: Provenance(),
) -> list[Hit]:
    """The best ``k`` distinct passages, as long as their text fits ``token_budget``.

    Duplicates (the same text under two documents) keep their best-ranked copy.
    Hits are taken in rank order and the first one that does not fit ends the
    list, so a hit is never dropped in favour of a worse one.
    """
    hits: list[Hit] = []
    seen: set[str] = set()
    used = 0
    for pid, score in ranking:
        passage = passages.get(pid)
        if passage is None:
            continue
        key = " ".join(passage.text.split()).casefold()
        if key in seen:
            continue
        cost = approx_tokens(passage.text)
        if token_budget is not None and used + cost > token_budget:
            break
        seen.add(key)
        used += cost
        hits.append(Hit(
            id=pid, text=passage.text, score=round(score, 8), title=passage.title, doc_id=passage.doc_id,
            space=passage.space, scores=stage_scores(pid), provenance=provenance(pid),
            source=passage.source, page=passage.page, headings=list(passage.headings),
        ))
        if len(hits) == k:
            break
    return hits
