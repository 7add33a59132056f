"""Clue expansion (MemoRAG): more searches from what recall found, each one checked before use.

Sources: offline, the kept facts and the facts around the strongest seeds
(their entity neighbourhoods); with an LLM, its sub-questions and text spans
written from the recalled entities and facts. A clue locates evidence; it is
never evidence itself, so every one passes the guards from seed 001 before
its passages may reach the hits:

- the original query is always the first clue;
- lines of three words or fewer are dropped, duplicates too, and at most
  ``n`` clues are returned;
- a clue must retrieve at least one passage at or above
  ``clue_min_similarity``, else it is dropped;
- a generated clue naming a thing the visible graph does not contain (the
  fluent clue) is ``grounded: false``: returned for inspection but none of
  its passages used (``clue_ungrounded="mark"``), or dropped (``"drop"``);
- clue-found passages share the passage budget with plain recall (about
  ``clue_passage_share`` of the slots) and the hits are then deduplicated and
  capped by ``k`` and ``token_budget`` like any recall;
- every clue carries, and logs, the passages it found.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from hippo.config import Settings
from hippo.graph.scoring import top_distinct
from hippo.ids import entity_id
from hippo.memory.recall import RankedPassages
from hippo.memory.source import RecallSource
from hippo.models import Clue
from hippo.text import normalize

log = logging.getLogger("hippo.clues")

ClueWriter = Callable[[str, list[str], list[str], int], list[tuple[str, str]]]
"""(query, recalled entity names, kept fact texts, n) -> [(clue text, "question" | "span")]."""
NamedPhrases = Callable[[str], list[str]]
"""The names of things a text mentions (people, places, organisations, products...)."""

MIN_WORDS = 4  # MemoRAG drops lines of three words or fewer
NEIGHBOUR_SEEDS = 3  # seeds whose neighbourhoods are read
WRITER_ENTITIES = 10


@dataclass
class Candidate:
    text: str
    kind: str  # query | question | span | fact | neighbour | entity
    weight: float
    seed_ids: list[str] = field(default_factory=list)
    grounded: bool | None = None  # None: to be checked (generated text)
    passages: list[tuple[str, float]] = field(default_factory=list)


# -- pure pieces ---------------------------------------------------------------------------


def screen(query: str, candidates: list[Candidate]) -> list[Candidate]:
    """The query first; then candidates in order without short lines and duplicates."""
    kept = [Candidate(text=query, kind="query", weight=1.0)]
    seen = {normalize(query)}
    for candidate in candidates:
        key = normalize(candidate.text)
        if not key or key in seen:
            continue
        if candidate.kind != "entity" and len(candidate.text.split()) < MIN_WORDS:
            continue
        seen.add(key)
        kept.append(candidate)
    return kept


def alternate(*groups: list[Candidate]) -> list[Candidate]:
    """One from each group in turn, so no source crowds out the others under the cap."""
    out: list[Candidate] = []
    for i in range(max((len(g) for g in groups), default=0)):
        out += [g[i] for g in groups if i < len(g)]
    return out


def interleave(primary: list[tuple[str, float]], clue_lists: list[list[str]], share: float
               ) -> list[tuple[str, float]]:
    """The primary ranking with clue-found passages woven in.

    Of the first m positions about ``share`` x m hold clue passages (taken
    round-robin over the clues, best clue first) and the rest continue the
    primary ranking; a passage already placed is skipped. The score is the
    position's 1/(rank+1): the order is the ranking.
    """
    placed: dict[str, float] = {}
    queue = [list(ids) for ids in clue_lists if ids]
    primary_ids = [pid for pid, _ in primary]
    p = 0
    turn = 0
    from_clues = 0
    total = len(set(primary_ids) | {pid for ids in queue for pid in ids})
    while len(placed) < total:
        want_clue = math.floor((len(placed) + 1) * share) > from_clues
        chosen = None
        if want_clue or p >= len(primary_ids):
            for _ in range(len(queue)):
                ids = queue[turn % len(queue)]
                turn += 1
                while ids and ids[0] in placed:
                    ids.pop(0)
                if ids:
                    chosen = ids.pop(0)
                    from_clues += 1
                    break
            queue = [ids for ids in queue if ids]
        if chosen is None:
            while p < len(primary_ids) and primary_ids[p] in placed:
                p += 1
            if p >= len(primary_ids):
                if not queue:
                    break
                continue
            chosen = primary_ids[p]
            p += 1
        placed[chosen] = 1.0 / (len(placed) + 1)
    return list(placed.items())


# -- the offline sources ---------------------------------------------------------------------


def fact_candidates(ranked: RankedPassages) -> list[Candidate]:
    """The kept facts, as recall already worded them."""
    return [Candidate(text=c.query, kind="fact", weight=c.weight or 0.0, seed_ids=list(c.seed_ids), grounded=True)
            for c in ranked.clues if c.kind == "fact" and c.query]


def neighbour_candidates(ranked: RankedPassages, source: RecallSource, limit: int) -> list[Candidate]:
    """Facts around the strongest seeds that recall did not keep, closest to the query first:
    the next hop a multi-hop question may need."""
    q = ranked.query_vector
    if q is None or not ranked.seeds or not source.fact_total() or limit <= 0:
        return []
    seeds = source.nodes([s.id for s in ranked.seeds[:NEIGHBOUR_SEEDS]])
    rows, scores = source.facts_around(q, np.fromiter(seeds.values(), dtype=np.int64, count=len(seeds)),
                                       limit * 4, ranked.kept_facts)
    if not len(rows):
        return []
    chosen = top_distinct(scores, source.fact_keys(rows).tolist(), limit, depth=limit * 4)
    ids = source.fact_ids(rows[chosen].tolist())
    texts = source.fact_texts(ids)
    out = []
    for i, fid in zip(chosen, ids, strict=True):
        ends = source.record_ids(source.fact_ends(int(rows[i])))
        if fid in texts:
            out.append(Candidate(text=texts[fid], kind="neighbour", weight=round(float(scores[i]), 6),
                                 seed_ids=[e for e in ends if e in seeds], grounded=True))
    return out


# -- named things, for the grounding check -------------------------------------------------------

_THING_LABELS = {"PERSON", "NORP", "FAC", "ORG", "GPE", "LOC", "PRODUCT", "EVENT", "WORK_OF_ART", "LAW",
                 "LANGUAGE"}
_spacy_lock = threading.Lock()


def named_phrases(text: str) -> list[str]:
    """Named entities of things (not dates or amounts), and runs of proper nouns outside them."""
    from hippo.extract.spacy import load_pipeline

    nlp = load_pipeline()
    with _spacy_lock:
        doc = nlp(text)
    phrases: list[str] = []
    covered: set[int] = set()
    for ent in doc.ents:
        if ent.label_ in _THING_LABELS:
            tokens = [t for t in ent if not (t.is_punct or t.pos_ in {"DET", "PRON"} or t.lower_ == "the")]
            if tokens:
                phrases.append(doc[tokens[0].i : tokens[-1].i + 1].text)
            covered.update(range(ent.start, ent.end))
    run: list = []
    for token in [*doc, None]:
        if token is not None and token.pos_ == "PROPN" and token.i not in covered:
            run.append(token)
            continue
        if run:
            phrases.append(doc[run[0].i : run[-1].i + 1].text)
            run = []
    return list(dict.fromkeys(p for p in phrases if normalize(p)))


# -- the expander ------------------------------------------------------------------------------


class ClueExpander:
    """Turns a recall into a clue-guided one. Holds no data; ``writer`` is the optional LLM step."""

    def __init__(self, settings: Settings, embed: Callable[[list[str]], np.ndarray],
                 phrases: NamedPhrases = named_phrases, writer: ClueWriter | None = None) -> None:
        self.settings = settings
        self._embed = embed
        self._phrases = phrases
        self._writer = writer

    def expand(self, query: str, ranked: RankedPassages, source: RecallSource, *, n: int) -> RankedPassages:
        """Recall's result with checked clues added; reads what it checks through the recall's ``source``
        (in process or store-side)."""
        if ranked.strategy == "empty":
            return ranked
        s = self.settings
        clock = time.perf_counter()
        notes = list(ranked.notes)
        generated: list[Candidate] = []
        if self._writer is not None:
            entities = [seed.name for seed in ranked.seeds[:WRITER_ENTITIES]]
            facts = [c.query for c in ranked.clues if c.kind == "fact" and c.query]
            try:
                generated = [Candidate(text=text.strip(), kind=kind if kind in ("question", "span") else "span",
                                       weight=1.0) for text, kind in self._writer(query, entities, facts, n)]
            except Exception as exc:  # the optional step failed: the offline sources still run
                notes.append(f"clue writer unavailable ({type(exc).__name__}): offline clue sources only")
        offline = alternate(fact_candidates(ranked), neighbour_candidates(ranked, source, n))
        entity_clues = [Candidate(text=c.query or "", kind="entity", weight=c.weight or 0.0,
                                  seed_ids=list(c.seed_ids), grounded=True)
                        for c in ranked.clues if c.kind == "entity"]
        candidates = screen(query, [*generated, *offline, *entity_clues])
        self._ground(candidates, source)
        self._retrieve(candidates, ranked, source)

        clues: list[Candidate] = [candidates[0]]
        for candidate in candidates[1:]:
            if len(clues) == n:
                break
            if candidate.kind != "entity" and not any(score >= s.clue_min_similarity
                                                      for _, score in candidate.passages):
                log.debug("clue %r dropped: no passage at or above %.2f", candidate.text, s.clue_min_similarity)
                continue
            if candidate.grounded is False and s.clue_ungrounded == "drop":
                log.info("clue %r dropped: names something the graph does not hold", candidate.text)
                continue
            clues.append(candidate)
        for candidate in clues:
            log.info("clue %r (%s, grounded=%s) found %s", candidate.text, candidate.kind, candidate.grounded,
                     [pid for pid, _ in candidate.passages])

        usable = [[pid for pid, _ in c.passages] for c in clues[1:] if c.grounded is not False and c.kind != "entity"]
        ranking = interleave(ranked.ranking, usable, s.clue_passage_share)
        dense = dict(ranked.dense)
        missing = [pid for pid, _ in ranking if pid not in dense]
        if missing and ranked.query_vector is not None:
            known = source.nodes(missing)
            cosines = source.passage_cosines(ranked.query_vector,
                                             np.fromiter(known.values(), dtype=np.int64, count=len(known)))
            dense.update({pid: float(c) for pid, c in zip(known, cosines.tolist(), strict=True) if np.isfinite(c)})
        timings = dict(ranked.timings)
        timings["clues"] = time.perf_counter() - clock
        return replace(ranked, ranking=ranking, dense=dense, clues=[_clue(c) for c in clues], notes=notes,
                       timings=timings)

    def _ground(self, candidates: list[Candidate], source: RecallSource) -> None:
        """Mark each unchecked candidate grounded (every thing it names is a visible entity, by
        name or by an embedding at least ``clue_ground_similarity`` close) or not. A candidate
        naming nothing stays ``None``."""
        unchecked = [c for c in candidates if c.grounded is None]
        named = {id(c): self._phrases(c.text) for c in unchecked}
        phrases = list(dict.fromkeys(p for found in named.values() for p in found))
        ids = {phrase: entity_id(normalize(phrase)) for phrase in phrases}
        visible = source.nodes(list(dict.fromkeys(ids.values())))  # entities a visible passage mentions
        found = {phrase: ids[phrase] in visible for phrase in phrases}
        unknown = [phrase for phrase in phrases if not found[phrase]]
        if unknown and source.entity_total():
            nearest = source.nearest_entities(self._embed(unknown), 1)  # visible entities only
            for phrase, (similarity, _) in zip(unknown, nearest, strict=True):
                found[phrase] = bool(len(similarity) and similarity[0] >= self.settings.clue_ground_similarity)
        for candidate in unchecked:
            names = named[id(candidate)]
            candidate.grounded = all(found.get(p, False) for p in names) if names else None

    def _retrieve(self, candidates: list[Candidate], ranked: RankedPassages, source: RecallSource) -> None:
        """The passages each clue finds: dense top ``clue_passages`` among visible passages; the
        query's are plain recall's own."""
        per_clue = self.settings.clue_passages
        candidates[0].passages = ranked.ranking[:per_clue]
        searches = [c for c in candidates[1:] if c.kind != "entity"]
        if not searches or not source.passage_total:
            return
        found = source.search_passages(self._embed([c.text for c in searches]), per_clue)
        for candidate, (sims, nodes) in zip(searches, found, strict=True):
            candidate.passages = [(pid, round(float(c), 6))
                                  for c, pid in zip(sims.tolist(), source.record_ids(nodes.tolist()), strict=True)
                                  if c >= self.settings.clue_min_similarity]


def _clue(c: Candidate) -> Clue:
    return Clue(query=c.text, seed_ids=c.seed_ids, weight=round(c.weight, 6), kind=c.kind,  # type: ignore[arg-type]
                grounded=c.grounded, passage_ids=[pid for pid, _ in c.passages])
