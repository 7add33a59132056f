"""The online step: query -> seeds -> PPR -> clues and draft hits.

Seeds come from two sources, fused:
(a) HippoRAG 2: the entities of the facts closest to the query, weighted by
    fact score / number of passages the entity appears in;
(b) HippoRAG 1: the query's named entities and noun phrases, each linked to
    its nearest entity nodes, weighted by similarity / number of passages.
Offline, without an LLM fact filter, (b) carries most of the signal; (a)
adds relations the query words do not name.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from hippo.config import Settings
from hippo.graph.bridge import bridge_seeds
from hippo.graph.ppr import power_pagerank
from hippo.graph.projection import GraphView
from hippo.graph.scoring import (
    fact_seed_weights,
    fuse_seeds,
    link_seed_weights,
    minmax,
    passage_mass,
    top_distinct,
    top_indices,
)
from hippo.memory.state import DerivedState
from hippo.memory.titles import title_seeds
from hippo.models import Clue, Seed, Strategy
from hippo.store.base import Spaces


@dataclass
class RankedPassages:
    """Recall before hit assembly: passage ids with scores, and what led there."""

    strategy: Strategy
    view: GraphView
    ranking: list[tuple[str, float]]
    dense: dict[str, float]
    clues: list[Clue]
    seeds: list[Seed]
    seed_vertices: dict[int, float]
    kept_facts: list[int]  # rows of ``state.facts``
    timings: dict[str, float]
    notes: list[str] = field(default_factory=list)  # what the caller should know (the fact filter's verdict)
    query_vector: np.ndarray | None = None
    fact_scores: list[float] = field(default_factory=list)  # aligned with ``kept_facts``

    @classmethod
    def fallback(cls, strategy: Strategy, view: GraphView, query: str, ranking: list[tuple[str, float]],
                 dense: dict[str, float], timings: dict[str, float], notes: list[str] | None = None,
                 query_vector: np.ndarray | None = None) -> RankedPassages:
        """No graph walk: the query itself is the one clue."""
        return cls(strategy=strategy, view=view, ranking=ranking, dense=dense,
                   clues=[Clue(query=query, kind="query", weight=1.0)], seeds=[], seed_vertices={},
                   kept_facts=[], timings=timings, notes=notes or [], query_vector=query_vector)


KEYWORD_POOL = 200  # BM25 hits read for the passage prior; the rest count as 0


class Lookup(Protocol):
    """Texts recall reads from the store to word its clues."""

    def entity_names(self, ids: list[str]) -> dict[str, str]: ...

    def fact_texts(self, ids: list[str]) -> dict[str, str]: ...

    def keyword_scores(self, query: str, limit: int, spaces: Spaces) -> dict[str, float]: ...


FactFilter = Callable[[str, list[str]], list[int]]
"""HippoRAG 2's recognition step: (query, candidate fact texts) -> indices of the facts to keep,
most relevant first. An empty list means none is relevant; an exception means no verdict."""


class Recaller:
    """Recall over one derived state. Holds no data of its own."""

    def __init__(self, settings: Settings, embed: Callable[[list[str]], np.ndarray],
                 query_phrases: Callable[[str], list[str]], fact_filter: FactFilter | None = None,
                 query_hops: Callable[[str], list[str]] | None = None) -> None:
        self.settings = settings
        self._embed = embed
        self._phrases = query_phrases
        self._filter = fact_filter
        self._hops = query_hops

    def rank(self, query: str, state: DerivedState, spaces: Spaces, *, n: int, k: int,
             lookup: Lookup) -> RankedPassages:
        s = self.settings
        timings: dict[str, float] = {}
        clock = time.perf_counter()
        view = state.projection.view(spaces)
        if len(view.passage_vertices) == 0:
            return RankedPassages.fallback("empty", view, query, [], {}, timings)
        phrases = self._phrases(query)
        hops = self._hops(query) if self._hops is not None and s.hop_fact_queries else []
        vectors = self._embed([query, *phrases, *hops])
        q, phrase_vectors, hop_vectors = vectors[0], vectors[1 : 1 + len(phrases)], vectors[1 + len(phrases) :]
        timings["embed"] = time.perf_counter() - clock

        clock = time.perf_counter()
        visible_rows, dense = self._dense(state, view, q)
        kept, fact_scores = self._facts(state, view, np.vstack([q, hop_vectors]) if len(hops) else q)
        links = self._links(state, view, phrase_vectors)
        timings["seeds"] = time.perf_counter() - clock
        notes: list[str] = []
        if self._filter is not None and kept:
            clock = time.perf_counter()
            kept, fact_scores, note = self._recognise(query, state, kept, fact_scores, lookup)
            timings["filter"] = time.perf_counter() - clock
            notes += [note] if note else []

        fact_seeds = fact_seed_weights(
            ((self._fact_vertices(state, row), fact_scores[i]) for i, row in enumerate(kept)),
            view.passage_count, s.seed_top_k,
        )
        link_seeds = link_seed_weights(((v, sim) for v, sim, _ in links), view.passage_count, s.seed_top_k)
        seeds = fuse_seeds(fact_seeds, link_seeds, s.fact_seed_share)
        visible_vertices = state.passage_vertex_of_row[visible_rows]
        ranking_k = max(k * 4, 50)

        if not seeds:
            ranking = [(state.passages.ids[visible_rows[i]], float(dense[i])) for i in top_indices(dense, ranking_k)]
            return RankedPassages.fallback("dense", view, query, ranking, dict(ranking), timings, notes, q)

        clock = time.perf_counter()
        reset = np.zeros(view.graph.vcount())
        for v, w in seeds.items():
            reset[v] += w
        reset[visible_vertices] += s.passage_weight * self._prior(query, dense, visible_vertices, state, spaces,
                                                                  lookup)
        for v, w in title_seeds(state.titles, query, view.visible_passage).items():
            reset[v] += s.title_weight * w
        mass = self._walk(view, reset)
        if s.bridge_weight > 0:  # the second hop: restart also at the entities of the best passages
            bridge = bridge_seeds(mass, view.passage_vertices, view.incidence, view.passage_count,
                                  passages=s.bridge_passages, k=s.bridge_top_k)
            for v, w in bridge.items():
                reset[v] += s.bridge_weight * w
            if bridge:  # the second walk also restarts at the first seeds: it ranks on its own
                mass = self._walk(view, reset)
        timings["ppr"] = time.perf_counter() - clock

        clock = time.perf_counter()
        vertex_ids = state.projection.record_ids
        order = top_indices(mass, ranking_k)
        ranked_vertices = view.passage_vertices[order]
        ranking = [(vertex_ids[v], float(mass[i])) for v, i in zip(ranked_vertices, order, strict=True)]
        dense_at = np.zeros(view.graph.vcount())
        dense_at[visible_vertices] = dense
        dense_by_id = {vertex_ids[v]: float(dense_at[v]) for v in ranked_vertices}

        seed_ids = {v: vertex_ids[v] for v in seeds}
        seed_names = lookup.entity_names(list(seed_ids.values()))
        seed_list = sorted(
            (Seed(id=seed_ids[v], name=seed_names.get(seed_ids[v], seed_ids[v]), weight=round(w, 6),
                  source="fact" if v in fact_seeds else "query_entity") for v, w in seeds.items()),
            key=lambda x: -x.weight,
        )
        fact_texts = lookup.fact_texts([state.facts.ids[row] for row in kept])
        clues = self._clues(state, kept, fact_scores, fact_texts, links, phrases, seeds, seed_ids, n)
        timings["readout"] = time.perf_counter() - clock
        strategy: Strategy = "graph" if fact_seeds else "entity_link"
        return RankedPassages(strategy=strategy, view=view, ranking=ranking, dense=dense_by_id, clues=clues,
                              seeds=seed_list, seed_vertices=seeds, kept_facts=kept, timings=timings, notes=notes,
                              query_vector=q, fact_scores=fact_scores)

    # -- pieces --------------------------------------------------------------------

    def _walk(self, view: GraphView, reset: np.ndarray) -> np.ndarray:
        """PPR from ``reset``, read out as one score per visible passage (``view.passage_vertices``)."""
        s = self.settings
        ppr = power_pagerank(view.transition, reset, s.damping)
        return passage_mass(ppr, view.passage_vertices, view.incidence, s.passage_readout, s.readout_blend,
                            strength=view.strength)

    def _recognise(self, query: str, state: DerivedState, kept: list[int], scores: list[float],
                   lookup: Lookup) -> tuple[list[int], list[float], str | None]:
        """The fact filter's verdict on the retrieved facts. Kept facts keep their retrieval
        scores. Keeping none leaves the query-entity seeds (else dense retrieval) to carry
        recall, as HippoRAG 2 falls back; a filter that fails keeps every fact (an outage of
        the model must not change what recall finds) and says so."""
        ids = [state.facts.ids[row] for row in kept]
        texts = lookup.fact_texts(ids)
        try:
            chosen = self._filter(query, [texts.get(fid, "") for fid in ids])
        except Exception as exc:  # any failure of the optional step: recall goes on without it
            return kept, scores, f"fact filter unavailable ({type(exc).__name__}): facts kept unfiltered"
        chosen = [i for i in dict.fromkeys(chosen) if isinstance(i, int) and 0 <= i < len(kept)]
        if not chosen:
            return [], [], f"the fact filter kept none of the {len(kept)} retrieved facts"
        return [kept[i] for i in chosen], [scores[i] for i in chosen], None

    def _prior(self, query: str, dense: np.ndarray, vertices: np.ndarray, state: DerivedState, spaces: Spaces,
               lookup: Lookup) -> np.ndarray:
        """The passage part of the reset vector (aligned with ``vertices``): min-max
        dense scores, mixed with BM25 when ``keyword_prior_share`` > 0 (rare
        names the embedder blurs)."""
        prior = minmax(dense)
        share = self.settings.keyword_prior_share
        if share <= 0:
            return prior
        keyword_at = np.zeros(len(state.projection.record_ids))
        for pid, score in lookup.keyword_scores(query, KEYWORD_POOL, spaces).items():
            keyword_at[state.projection.vertex[pid]] = score
        keyword = keyword_at[vertices]
        return (1 - share) * prior + share * (minmax(keyword) if keyword.any() else keyword)

    @staticmethod
    def _dense(state: DerivedState, view: GraphView, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Rows of visible passages and their cosine with the query."""
        rows = np.flatnonzero(view.visible_passage[state.passage_vertex_of_row])
        return rows, state.passages.scores(q)[rows]

    def _facts(self, state: DerivedState, view: GraphView, q: np.ndarray) -> tuple[list[int], list[float]]:
        """The top facts (distinct texts) among visible ones, with min-max scores.

        ``q`` is the query vector, or a matrix of it and the first hops of its chain: a fact
        then scores its best cosine with any of them."""
        top_k = self.settings.fact_top_k
        if not len(state.facts) or top_k == 0:
            return [], []
        passage_vertex = state.fact_passage_vertex
        rows = np.flatnonzero((passage_vertex >= 0) & view.visible_passage[np.maximum(passage_vertex, 0)])
        if not len(rows):
            return [], []
        raw = state.facts.scores(q)[rows]
        if raw.ndim == 2:
            raw = raw.max(axis=1)
        scaled = minmax(raw)
        hashes = state.facts.hashes
        chosen = top_distinct(raw, [hashes[r] for r in rows], top_k, depth=top_k * 8)
        return [int(rows[i]) for i in chosen], [float(scaled[i]) for i in chosen]

    @staticmethod
    def _fact_vertices(state: DerivedState, row: int) -> list[int]:
        subject, obj, _ = state.fact_ends[row]
        vertex = state.projection.vertex
        return [vertex[e] for e in (subject, obj) if e in vertex]

    def _links(self, state: DerivedState, view: GraphView, phrase_vectors: np.ndarray
               ) -> list[tuple[int, float, int]]:
        """(vertex, similarity, phrase index) for each query phrase's nearest visible entities."""
        s = self.settings
        if not len(phrase_vectors) or not len(state.entities) or s.link_top_k == 0:
            return []
        vertex_of_row = state.entity_vertex_of_row
        visible = (vertex_of_row >= 0) & (view.passage_count[np.maximum(vertex_of_row, 0)] > 0)
        rows = np.flatnonzero(visible)
        if not len(rows):
            return []
        sims = state.entities.scores(phrase_vectors)[rows]  # rows x phrases
        links = []
        for p in range(sims.shape[1]):
            column = sims[:, p]
            for i in top_indices(column, s.link_top_k):
                if column[i] >= s.link_min_score:
                    links.append((int(vertex_of_row[rows[i]]), float(column[i]), p))
        return links

    def _clues(self, state: DerivedState, kept: list[int], fact_scores: list[float],
               fact_texts: dict[str, str], links: list[tuple[int, float, int]], phrases: list[str],
               seeds: dict[int, float], seed_ids: dict[int, str], n: int) -> list[Clue]:
        """Surrogate queries (kept facts) and seed ids (linked entities), deduped and capped."""
        clues: list[Clue] = []
        for row, score in zip(kept, fact_scores, strict=True):
            ids = [seed_ids[v] for v in self._fact_vertices(state, row) if v in seeds]
            clues.append(Clue(query=fact_texts.get(state.facts.ids[row]), seed_ids=ids,
                              weight=round(score, 6), kind="fact"))
        for v, similarity, p in links:
            if v in seeds:
                clues.append(Clue(query=phrases[p], seed_ids=[seed_ids[v]], weight=round(seeds[v], 6),
                                  kind="entity"))
        unique: dict[tuple[str, tuple[str, ...]], Clue] = {}
        for clue in sorted(clues, key=lambda c: -(c.weight or 0)):
            unique.setdefault(((clue.query or "").casefold(), tuple(clue.seed_ids)), clue)
        return list(unique.values())[:n]
