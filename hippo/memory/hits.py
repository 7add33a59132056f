"""Turn a ranking of passage ids into hits: dedup, cap by count and by tokens."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from hippo.graph.edges import MENTION
from hippo.models import Hit, Passage, Provenance
from hippo.text import approx_tokens

if TYPE_CHECKING:  # recall and the sources import this module
    from hippo.memory.recall import RankedPassages
    from hippo.memory.source import RecallSource
    from hippo.store import Store


PassageReader = Callable[[list[str]], dict[str, Passage]]
"""Passage ids -> the passages found, by id (one batched read)."""


def read_passages(store: Store) -> PassageReader:
    return lambda ids: {p.id: p for p in store.passages(ids)}


def assemble_hits(
    ranking: list[tuple[str, float]],
    read: PassageReader,
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

    Passages are read as they are needed, a window at a time: the first ``k``
    and a few more (duplicates are rare), then twice as many each time, so a
    recall reads about ``k`` passages from the store, not the whole head it
    ranked (at 100k passages, reading 40 with their mentions was ~2.7 ms of a recall).
    """
    hits: list[Hit] = []
    seen: set[str] = set()
    used, start, window = 0, 0, k + max(2, k // 4)
    while start < len(ranking) and len(hits) < k:
        part = ranking[start : start + window]
        passages = read([pid for pid, _ in part])
        start, window = start + window, 2 * window
        for pid, score in part:
            passage = passages.get(pid)
            if passage is None:
                continue
            key = " ".join(passage.text.split()).casefold()
            if key in seen:
                continue
            cost = approx_tokens(passage.text)
            if token_budget is not None and used + cost > token_budget:
                return hits
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


def recall_hits(ranked: RankedPassages, source: RecallSource, store: Store, *, k: int,
                token_budget: int | None) -> list[Hit]:
    """A recall's hits: its ranking's head as hits, each with the seed entities it mentions and the
    kept facts read from it or joining two of them (its provenance)."""
    mentioned: dict[str, set[int]] = {}
    passages = read_passages(store)

    def read(pids: list[str]) -> dict[str, Passage]:
        if ranked.seed_vertices:  # the entities each passage of the window mentions, read in one batch
            node_of = source.nodes(pids)
            ids = [pid for pid in pids if pid in node_of]
            owners, columns = source.edges(np.array([node_of[pid] for pid in ids], dtype=np.int64))
            mentions = columns["kinds"] == MENTION
            for owner, entity in zip(owners[mentions].tolist(), columns["targets"][mentions].tolist(), strict=True):
                mentioned.setdefault(ids[owner], set()).add(int(entity))
        return passages(pids)
    seed_ids = dict(zip(source.record_ids(list(ranked.seed_vertices)), ranked.seed_vertices, strict=True))
    kept = ranked.kept_facts
    fact_rows = list(zip(source.fact_ids(kept), [source.fact_ends(row) for row in kept],
                         source.fact_passages(kept), strict=True))

    def provenance(pid: str) -> Provenance:
        if not ranked.seed_vertices:
            return Provenance()
        seen = mentioned.get(pid, set())
        nodes = [sid for sid, v in seed_ids.items() if v in seen]
        facts = [fid for fid, ends, passage in fact_rows
                 if passage == pid or (len(ends) == 2 and ends[0] in seen and ends[1] in seen)]
        return Provenance(nodes=nodes, facts=facts)

    def stage_scores(pid: str) -> dict[str, float]:
        dense = ranked.dense.get(pid)
        return {"dense": round(dense, 6)} if dense is not None else {}

    return assemble_hits(ranked.ranking[: k * 4], read, k=k, token_budget=token_budget, stage_scores=stage_scores,
                         provenance=provenance)
