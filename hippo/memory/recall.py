"""The online step: query -> seeds -> PPR -> clues and draft hits.

Seeds come from two sources, fused:
(a) HippoRAG 2: the entities of the facts closest to the query, weighted by
    fact score / number of passages the entity appears in;
(b) HippoRAG 1: the query's named entities and noun phrases, each linked to
    its nearest entity nodes, weighted by similarity / number of passages.
Offline, without an LLM fact filter, (b) carries most of the signal; (a)
adds relations the query words do not name.

Everything recall reads goes through the reader's ``RecallSource``
(``hippo.memory.source``); the walk from the seeds is ``hippo.memory.spread``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from hippo.config import Settings
from hippo.graph.bridge import Relevance, bridge_seeds, fact_relevance
from hippo.graph.scoring import (
    anchored_facts,
    fact_seed_weights,
    fuse_seeds,
    link_seed_weights,
    top_distinct,
    top_indices,
)
from hippo.memory.source import RecallSource
from hippo.memory.spread import Tail, Walk, readout
from hippo.models import Clue, Seed, Strategy


@dataclass
class RankedPassages:
    """Recall before hit assembly: passage ids with scores, and what led there."""

    strategy: Strategy
    source: RecallSource
    ranking: list[tuple[str, float]]
    dense: dict[str, float]
    clues: list[Clue]
    seeds: list[Seed]
    seed_vertices: dict[int, float]
    kept_facts: list[int]  # fact rows of ``source``
    timings: dict[str, float]
    notes: list[str] = field(default_factory=list)  # what the caller should know (the fact filter's verdict)
    query_vector: np.ndarray | None = None
    fact_scores: list[float] = field(default_factory=list)  # aligned with ``kept_facts``

    @classmethod
    def fallback(cls, strategy: Strategy, source: RecallSource, query: str, ranking: list[tuple[str, float]],
                 dense: dict[str, float], timings: dict[str, float], notes: list[str] | None = None,
                 query_vector: np.ndarray | None = None) -> RankedPassages:
        """No graph walk: the query itself is the one clue."""
        return cls(strategy=strategy, source=source, ranking=ranking, dense=dense,
                   clues=[Clue(query=query, kind="query", weight=1.0)], seeds=[], seed_vertices={},
                   kept_facts=[], timings=timings, notes=notes or [], query_vector=query_vector)


KEYWORD_POOL = 200  # BM25 hits read for the passage prior (with passage_prior_top = 0); the rest count as 0


@dataclass(frozen=True)
class DenseHits:
    """The passages closest to the query, and the range of every visible passage's cosine."""

    vertices: np.ndarray
    scores: np.ndarray
    low: float
    high: float

    def scaled(self, cosines: np.ndarray) -> np.ndarray:
        """Min-max over every visible passage, as if all had been scored."""
        if self.high - self.low < 1e-12:
            return np.ones_like(cosines, dtype=np.float64)
        return (np.asarray(cosines, dtype=np.float64) - self.low) / (self.high - self.low)

    def score_of(self, source: RecallSource, q: np.ndarray, vertices: np.ndarray) -> np.ndarray:
        """Cosines of these passages: from the hits when there, else scored now."""
        known = dict(zip(self.vertices.tolist(), self.scores.tolist(), strict=True))
        missing = np.array([v for v in vertices.tolist() if v not in known], dtype=np.int64)
        if len(missing):
            known.update(zip(missing.tolist(), source.passage_cosines(q, missing).tolist(), strict=True))
        return np.array([known[v] for v in vertices.tolist()], dtype=np.float64)


FactFilter = Callable[[str, list[str]], list[int]]
"""HippoRAG 2's recognition step: (query, candidate fact texts) -> indices of the facts to keep,
most relevant first. An empty list means none is relevant; an exception means no verdict."""


class Recaller:
    """Recall over one reader's ``RecallSource``. Holds no data of its own."""

    def __init__(self, settings: Settings, embed: Callable[[list[str]], np.ndarray],
                 query_phrases: Callable[[str], list[str]], fact_filter: FactFilter | None = None,
                 query_hops: Callable[[str], list[str]] | None = None) -> None:
        self.settings = settings
        self._embed = embed
        self._phrases = query_phrases
        self._filter = fact_filter
        self._hops = query_hops

    def rank(self, query: str, source: RecallSource, *, n: int, k: int) -> RankedPassages:
        s = self.settings
        timings: dict[str, float] = {}
        clock = time.perf_counter()
        if source.passage_total == 0:
            return RankedPassages.fallback("empty", source, query, [], {}, timings)
        share, top = s.keyword_prior_share, s.passage_prior_top
        source.read_ahead(query, (top or KEYWORD_POOL) if share > 0 else 0)  # what only needs the text
        phrases = self._phrases(query)
        hops = self._hops(query) if self._hops is not None and s.hop_fact_queries else []
        vectors = self._embed([query, *phrases, *hops])
        q, phrase_vectors, hop_vectors = vectors[0], vectors[1 : 1 + len(phrases)], vectors[1 + len(phrases) :]
        timings["embed"] = time.perf_counter() - clock

        clock = time.perf_counter()
        ranking_k = max(k * 4, 50)
        dense_k, fact_queries = max(s.passage_prior_top, ranking_k), np.vstack([q, hop_vectors]) if len(hops) else q
        self._search_ahead(source, q, dense_k, fact_queries, phrase_vectors)
        keyword = self._keywords(query, source)  # BM25 on this thread while the searches run on others
        dense = self._dense(source, q, dense_k)
        kept, fact_scores = self._facts(source, fact_queries)
        links = self._links(source, phrase_vectors)
        titles = source.title_seeds(query)
        timings["seeds"] = time.perf_counter() - clock
        notes: list[str] = []
        judged = False  # whether an LLM's recognition step gave its verdict on the facts
        if self._filter is not None and kept:
            clock = time.perf_counter()
            kept, fact_scores, note, judged = self._recognise(query, source, kept, fact_scores)
            timings["filter"] = time.perf_counter() - clock
            notes += [note] if note else []
        if s.fact_anchor and kept and not judged:  # the offline stand-in, also when the model is down
            kept, fact_scores = self._anchor(source, kept, fact_scores, links, titles)

        fact_seeds = fact_seed_weights(
            ((source.fact_ends(row), fact_scores[i]) for i, row in enumerate(kept)),
            source.passage_count, s.seed_top_k,
        )
        link_seeds = link_seed_weights(((v, sim) for v, sim, _ in links), source.passage_count, s.seed_top_k)
        seeds = fuse_seeds(fact_seeds, link_seeds, s.fact_seed_share)

        if not seeds:
            ranking = list(zip(source.record_ids(dense.vertices[:ranking_k].tolist()),
                               map(float, dense.scores[:ranking_k].tolist()), strict=True))
            return RankedPassages.fallback("dense", source, query, ranking, dict(ranking), timings, notes, q)

        clock = time.perf_counter()
        # the seeds and clues read names and texts (the store): on another thread while this one walks
        described = source.aside(self._describe, source, seeds, set(fact_seeds), kept, fact_scores, links, phrases, n)
        prior_vertices, prior = self._prior(q, dense, keyword, source)
        reset_vertices = np.concatenate([np.fromiter(seeds, dtype=np.int64, count=len(seeds)), prior_vertices,
                                         np.fromiter(titles, dtype=np.int64, count=len(titles))])
        reset_weights = np.concatenate([np.fromiter(seeds.values(), dtype=np.float64, count=len(seeds)),
                                        s.passage_weight * prior,
                                        s.title_weight * np.fromiter(titles.values(), dtype=np.float64,
                                                                     count=len(titles))])
        tail = self._tail(source, q, dense, prior_vertices) if s.passage_prior_top and s.prior_tail else None
        walk = Walk.of(source, reset_vertices, reset_weights, s)
        passage_vertices, mass = readout(source, walk, s, tail, top=ranking_k)
        if s.bridge_weight > 0:  # the second hop: restart also at the entities of the best passages
            bridge = bridge_seeds(mass, passage_vertices, source.mentions, source.passage_count,
                                  passages=s.bridge_passages, k=s.bridge_top_k,
                                  relevance=self._fact_relevance(source, q) if s.bridge_source == "facts" else None)
            if bridge:  # the second walk also restarts at the first seeds: it ranks on its own
                walk = walk.extended(source, np.fromiter(bridge, dtype=np.int64),
                                     s.bridge_weight * np.fromiter(bridge.values(), dtype=np.float64), s)
                passage_vertices, mass = readout(source, walk, s, tail, top=ranking_k)
        timings["ppr"] = time.perf_counter() - clock

        clock = time.perf_counter()
        order = top_indices(mass, ranking_k)
        ranked_vertices = passage_vertices[order]
        ranked_ids = source.record_ids(ranked_vertices.tolist())
        ranking = [(pid, float(mass[i])) for pid, i in zip(ranked_ids, order, strict=True)]
        dense_by_id = dict(zip(ranked_ids, dense.score_of(source, q, ranked_vertices).tolist(), strict=True))
        seed_list, clues = described()
        timings["readout"] = time.perf_counter() - clock
        strategy: Strategy = "graph" if fact_seeds else "entity_link"
        return RankedPassages(strategy=strategy, source=source, ranking=ranking, dense=dense_by_id, clues=clues,
                              seeds=seed_list, seed_vertices=seeds, kept_facts=kept, timings=timings, notes=notes,
                              query_vector=q, fact_scores=fact_scores)

    # -- pieces --------------------------------------------------------------------

    def _search_ahead(self, source: RecallSource, q: np.ndarray, dense_k: int, fact_queries: np.ndarray,
                      phrase_vectors: np.ndarray) -> None:
        """Tell the source every vector search ``_dense``, ``_facts`` and ``_links`` will ask, with
        their arguments, so a remote source runs them at once (the same conditions as theirs)."""
        s = self.settings
        source.search_ahead("passages", q, dense_k)
        if s.fact_top_k and source.fact_total():
            source.search_ahead("facts", fact_queries, s.fact_top_k * 8)
        if len(phrase_vectors) and s.link_top_k and source.entity_total():
            source.search_ahead("entities", phrase_vectors, s.link_top_k)

    @staticmethod
    def _anchor(source: RecallSource, kept: list[int], scores: list[float], links: list[tuple[int, float, int]],
                titles: dict[int, float]) -> tuple[list[int], list[float]]:
        """The retrieved facts about what the query names (``anchored_facts``), with their scores."""
        named_facts = {int(row) for v in titles for row in source.passage_fact_rows(v).tolist()}
        keep = anchored_facts([source.fact_ends(row) for row in kept], kept, {v for v, _, _ in links}, named_facts)
        return [kept[i] for i in keep], [scores[i] for i in keep]

    @staticmethod
    def _fact_relevance(source: RecallSource, q: np.ndarray) -> Relevance:
        def relevance(passage: int) -> dict[int, float]:
            rows = source.passage_fact_rows(passage)
            return fact_relevance(rows, source.fact_cosines(q, rows), source.fact_ends) if len(rows) else {}
        return relevance

    def _tail(self, source: RecallSource, q: np.ndarray, dense: DenseHits, prior_vertices: np.ndarray) -> Tail:
        """The reset weight the full prior would give each of these vertices and the top-M prior
        did not: passages the walk reached outside the top M keep their own dense prior (BM25
        beyond its top M is 0 either way). Of the full prior's PPR this is the direct term, not
        what that mass would spread; measured, it recovers most of what the top M alone lost."""
        s = self.settings
        weight = s.passage_weight * (1.0 - s.keyword_prior_share)

        # what it gave so far, by vertex (sorted: the walks overlap); the prior's vertices sorted
        known = {"vertices": np.zeros(0, dtype=np.int64), "values": np.zeros(0)}
        in_prior = np.unique(prior_vertices)
        # a passage outside the dense top M scores no higher than the M-th (up to float32 rounding
        # between two ways of scoring it): its tail is capped there, also when an approximate search
        # missed one above, which bounds the tail for ``readout``
        # (``dense`` may hold more than M: the M-th, not its last, is the cap)
        mth = dense.scores[:s.passage_prior_top][-1:]
        cap = float(np.clip(dense.scaled(mth + 1e-5), 0.0, 1.0)[0]) if len(mth) else 1.0

        def tail(vertices: np.ndarray) -> np.ndarray:
            done, values = known["vertices"], known["values"]
            fresh = np.unique(vertices[~_among(vertices, done)])
            if len(fresh):
                out = np.zeros(len(fresh))
                at = np.flatnonzero(source.visible_passage[fresh] & ~_among(fresh, in_prior))
                if len(at):
                    cosines = source.passage_cosines(q, fresh[at])
                    out[at] = weight * np.clip(np.nan_to_num(dense.scaled(cosines), neginf=0.0), 0.0, cap)
                where = np.searchsorted(done, fresh)
                done = known["vertices"] = np.insert(done, where, fresh)
                values = known["values"] = np.insert(values, where, out)
            return values[np.searchsorted(done, vertices)]
        return Tail(tail, bound=weight * cap)

    def _recognise(self, query: str, source: RecallSource, kept: list[int],
                   scores: list[float]) -> tuple[list[int], list[float], str | None, bool]:
        """The fact filter's verdict on the retrieved facts. Kept facts keep their retrieval
        scores. Keeping none leaves the query-entity seeds (else dense retrieval) to carry
        recall, as HippoRAG 2 falls back; a filter that fails gives no verdict (the last value):
        recall goes on as offline, anchoring included (an outage of the model must not change
        what recall finds), and says so."""
        ids = source.fact_ids(kept)
        texts = source.fact_texts(ids)
        try:
            chosen = self._filter(query, [texts.get(fid, "") for fid in ids])
        except Exception as exc:  # any failure of the optional step: recall goes on without it
            return kept, scores, f"fact filter unavailable ({type(exc).__name__}): recall as offline", False
        chosen = [i for i in dict.fromkeys(chosen) if isinstance(i, int) and 0 <= i < len(kept)]
        if not chosen:
            return [], [], f"the fact filter kept none of the {len(kept)} retrieved facts", True
        return [kept[i] for i in chosen], [scores[i] for i in chosen], None, True

    def _keywords(self, query: str, source: RecallSource) -> dict[int, float]:
        """BM25 scores for the passage prior (none when it has no BM25 share)."""
        top = self.settings.passage_prior_top
        return source.keyword_scores(query, top or KEYWORD_POOL) if self.settings.keyword_prior_share > 0 else {}

    def _prior(self, q: np.ndarray, dense: DenseHits, keyword: dict[int, float],
               source: RecallSource) -> tuple[np.ndarray, np.ndarray]:
        """The passage part of the reset vector: (passage vertices, weights before
        ``passage_weight``). Min-max dense scores, mixed with BM25 when
        ``keyword_prior_share`` > 0 (rare names the embedder blurs), on the top
        ``passage_prior_top`` passages by dense score and by BM25 score only: a
        sparse reset, so the walk starts where the query points, not on every
        passage (``passage_prior_top = 0`` gives every visible passage a prior, as
        hippo did before; O(passages))."""
        top = self.settings.passage_prior_top
        vertices, cosines = (dense.vertices[:top], dense.scores[:top]) if top else self._every_passage(source, q)
        share = self.settings.keyword_prior_share
        have = set(vertices.tolist())
        extra = np.array([v for v in keyword if v not in have], dtype=np.int64)
        if len(extra) and top:
            vertices = np.concatenate([vertices, extra])
            cosines = np.concatenate([cosines, source.passage_cosines(q, extra)])
        prior = dense.scaled(cosines)
        if share <= 0:
            return vertices, prior
        matched = np.array([keyword.get(v, 0.0) for v in vertices.tolist()])
        # BM25 is 0 for most passages, so its minimum is 0 unless every visible passage matched.
        low = float(matched.min()) if len(keyword) >= source.passage_total else 0.0
        high = float(matched.max()) if len(matched) else 0.0
        scaled = (matched - low) / (high - low) if high - low > 1e-12 else np.ones_like(matched) * (high > 0)
        return vertices, (1 - share) * prior + share * scaled

    @staticmethod
    def _every_passage(source: RecallSource, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        vertices = source.passage_nodes()
        return vertices, source.passage_cosines(q, vertices)

    @staticmethod
    def _dense(source: RecallSource, q: np.ndarray, k: int) -> DenseHits:
        """The ``k`` visible passages closest to the query, with the range of every visible
        passage's cosine (an approximate index finds the lowest by searching for ``-q``)."""
        nearest = source.nearest_passages(q, k)
        scores = nearest.scores
        return DenseHits(vertices=nearest.handles, scores=scores.astype(np.float64), low=nearest.low,
                         high=float(scores[0]) if len(scores) else 0.0)

    def _facts(self, source: RecallSource, q: np.ndarray) -> tuple[list[int], list[float]]:
        """The top facts (distinct texts) among visible ones, with min-max scores over every
        visible fact (an approximate index finds the lowest by searching for ``-q``).

        ``q`` is the query vector, or a matrix of it and the first hops of its chain: a fact
        then scores its best cosine with any of them (and the scale's floor is the highest of
        their floors, a bound of the true one)."""
        top_k = self.settings.fact_top_k
        if not source.fact_total() or top_k == 0:
            return [], []
        queries = np.atleast_2d(q)
        found = [source.nearest_facts(x, top_k * 8) for x in queries]
        raw, rows, low = found[0].scores, found[0].handles, found[0].low
        if len(found) > 1:
            rows = np.unique(np.concatenate([f.handles for f in found]))
            raw = np.max([source.fact_cosines(x, rows) for x in queries], axis=0)
            low = max(f.low for f in found)
            rows, raw = rows[np.argsort(-raw, kind="stable")], -np.sort(-raw, kind="stable")
        if not len(rows):
            return [], []
        raw = raw.astype(np.float64)
        high = float(raw[0])
        scaled = (raw - low) / (high - low) if high - low > 1e-12 else np.ones_like(raw)
        keys = source.fact_keys(rows).tolist()
        chosen = top_distinct(raw, keys, top_k, depth=top_k * 8)
        return [int(rows[i]) for i in chosen], [float(scaled[i]) for i in chosen]

    def _links(self, source: RecallSource, phrase_vectors: np.ndarray) -> list[tuple[int, float, int]]:
        """(vertex, similarity, phrase index) for each query phrase's nearest visible entities."""
        s = self.settings
        if not len(phrase_vectors) or not source.entity_total() or s.link_top_k == 0:
            return []
        links = []
        for p, (sims, vertices) in enumerate(source.nearest_entities(phrase_vectors, s.link_top_k)):
            for sim, v in zip(sims.tolist(), vertices.tolist(), strict=True):
                if sim >= s.link_min_score:
                    links.append((int(v), float(sim), p))
        return links

    def _describe(self, source: RecallSource, seeds: dict[int, float], fact_seeds: set[int], kept: list[int],
                  fact_scores: list[float], links: list[tuple[int, float, int]], phrases: list[str],
                  n: int) -> tuple[list[Seed], list[Clue]]:
        """The seeds as the caller sees them (ids, names, weights), and the clues."""
        seed_ids = dict(zip(seeds, source.record_ids(list(seeds)), strict=True))
        seed_names = source.entity_names(list(seed_ids.values()))
        seed_list = sorted(
            (Seed(id=seed_ids[v], name=seed_names.get(seed_ids[v], seed_ids[v]), weight=round(w, 6),
                  source="fact" if v in fact_seeds else "query_entity") for v, w in seeds.items()),
            key=lambda x: -x.weight,
        )
        fact_texts = source.fact_texts(source.fact_ids(kept))
        return seed_list, self._clues(source, kept, fact_scores, fact_texts, links, phrases, seeds, seed_ids, n)

    def _clues(self, source: RecallSource, kept: list[int], fact_scores: list[float],
               fact_texts: dict[str, str], links: list[tuple[int, float, int]], phrases: list[str],
               seeds: dict[int, float], seed_ids: dict[int, str], n: int) -> list[Clue]:
        """Surrogate queries (kept facts) and seed ids (linked entities), deduped and capped."""
        clues: list[Clue] = []
        for row, fid, score in zip(kept, source.fact_ids(kept), fact_scores, strict=True):
            ids = [seed_ids[v] for v in source.fact_ends(row) if v in seeds]
            clues.append(Clue(query=fact_texts.get(fid), seed_ids=ids, weight=round(score, 6), kind="fact"))
        for v, similarity, p in links:
            if v in seeds:
                clues.append(Clue(query=phrases[p], seed_ids=[seed_ids[v]], weight=round(seeds[v], 6),
                                  kind="entity"))
        unique: dict[tuple[str, tuple[str, ...]], Clue] = {}
        for clue in sorted(clues, key=lambda c: -(c.weight or 0)):
            unique.setdefault(((clue.query or "").casefold(), tuple(clue.seed_ids)), clue)
        return list(unique.values())[:n]


def _among(values: np.ndarray, ordered: np.ndarray) -> np.ndarray:
    """Whether each of ``values`` is in ``ordered`` (sorted, distinct): a binary search each, where
    ``np.isin`` sorts both (a recall's tail asks this of ~370 passages four times: 0.2 ms with isin)."""
    if not len(ordered):
        return np.zeros(len(values), dtype=bool)
    at = np.minimum(np.searchsorted(ordered, values), len(ordered) - 1)
    return ordered[at] == values
