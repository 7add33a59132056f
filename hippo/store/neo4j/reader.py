"""Store-side reads for recall served from Neo4j (``HIPPO_NEO4J_READ=store``).

``Neo4jReader`` is what ``hippo.memory.store_source.StoreSource`` asks the
database, one Cypher round trip per call (``hippo/cypher/read_*.cypher``), all
in read transactions (on a cluster: routed to followers), all within one
reader's spaces: live passages of those spaces, the entities they mention,
the facts read from them. Ids come back as strings; the source hands out the
integer handles. ``round_trips`` counts the statements run, the unit a remote
read costs; ``calls`` and ``spent`` count them and the seconds waited, by statement.

A vector index answers a global top k, and hidden or retired records sit in
it too. ``nearest`` therefore over-fetches (2k to start, at least 16) and
doubles the fetch while it finds fewer than k visible records and the index
had more; past ``max_fetch`` it scores the reader's visible records exactly
instead (O(what the reader sees)), so a reader of a small space still gets its
true top k. Scores are cosines (the index's (1 + cos) / 2, mapped back; an index of int8 codes has
its hits scored again from their vectors, ``int8``).

Neo4j's index searches as wide as it is asked to fetch (Lucene's HNSW uses k as
its beam), so a caller that needs one record found reliably asks for more. A
clue's 3 passages are searched at ``WIDE_FETCH`` (128): at 16, 2Wiki's
clue-guided recalls matched in-process ones for 54 of 100 questions, at 128 for
80. The floor of a query's cosines (the nearest record to ``-q``) is searched as
wide as the in-process ANN searches it (``AnnSettings.min_rerank``, 40; the
caller, ``StoreSource``, asks for that width): found exactly for 62 of 100 2Wiki
questions at 16 and for all 100 at 128, but what recall needs is the in-process
answer, and at 40 the
top-10 overlap with in-process recall stayed 0.968 on MuSiQue and went 0.964 ->
0.963 on 2Wiki's 500 questions (R@5 unchanged), while the facts' floor search
cost 8-9 ms of Neo4j CPU at 128 against ~5 at 64 (100k passages). Of a wide
search's hits only the first ``max(2k, KEEP)`` visible ones (k: the largest
asked in one round trip), in the index's order, are checked and scored exactly:
a top k among 2k candidates as before, and for the floor (k = 1) the best of as
few, where checking all 128 cost 9 ms more for facts.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from hippo.models import TextForm
from hippo.store.base import Spaces, VectorKind
from hippo.store.neo4j.connection import Connection
from hippo.store.neo4j.frontier import EMPTY, Frontier, Owners
from hippo.store.neo4j.schema import META

Family = Literal["passages", "entities", "facts"]
INDEX_OF: dict[Family, str] = {"passages": "passage_embedding", "entities": "entity_embedding",
                               "facts": "fact_embedding"}
FIRST_FETCH = 16
WIDE_FETCH = 128  # a search for a few records it must find (a clue's passages): the module's docstring
KEEP = 8  # visible hits read per search at least, in the index's order (2k for a top k)
SPLIT_FROM = 256  # frontier nodes per statement before a push wave's read is split (``parts``)
MAX_PARTS = 16
PARTS = ThreadPoolExecutor(max_workers=MAX_PARTS, thread_name_prefix="hippo-frontier")


@dataclass(frozen=True)
class Statistics:
    """The reader's view as a whole, at one store revision."""

    revision: int
    passages: int  # live passages in the reader's spaces
    words: int  # their summed length in BM25's words
    facts: int  # fact vectors, visible or not
    entities: int  # entity vectors, visible or not
    edges: int = 0  # relations, mentions and synonyms, visible or not
    stored: int = 0  # passages, live or not, in every space

    @property
    def whole(self) -> bool:
        """Every stored passage is live and in the reader's spaces: nothing is hidden from the reader."""
        return self.passages == self.stored


def cosine(score: float) -> float:
    """The vector index's similarity, (1 + cos) / 2, as the cosine."""
    return 2.0 * float(score) - 1.0


class Neo4jReader:
    """Recall's reads of one Neo4j database, for one reader's spaces."""

    def __init__(self, db: Connection, spaces: Spaces, *, max_fetch: int = 4096, parts: int = 1,
                 int8: frozenset[str] = frozenset(INDEX_OF.values())) -> None:
        self.db = db
        self.spaces = None if spaces is None else sorted(spaces)
        self.int8 = int8  # vector indexes whose own scores are approximate (``schema.int8_indexes``)
        self.max_fetch = max_fetch
        self.parts = max(1, min(parts, MAX_PARTS))
        self.spent: Counter[str] = Counter()  # seconds waited per statement (reads ahead overlap)
        self.calls: Counter[str] = Counter()
        self._counting = threading.Lock()  # reads run on several threads at once

    @property
    def round_trips(self) -> int:
        """Statements run so far, every kind."""
        return sum(self.counts()[0].values())

    def counts(self) -> tuple[Counter[str], Counter[str]]:
        """Copies of ``calls`` and ``spent``, taken while no read updates them."""
        with self._counting:
            return Counter(self.calls), Counter(self.spent)

    def _read(self, name: str, doing: str, **params: Any) -> list[Any]:
        started = time.perf_counter()
        try:
            return self.db.read(name, doing, spaces=self.spaces, **params)
        finally:
            with self._counting:
                self.spent[name] += time.perf_counter() - started
                self.calls[name] += 1

    # -- the view ------------------------------------------------------------------------

    def statistics(self) -> Statistics:
        rows = self._read("read_statistics", "reading the reader's statistics", meta=META)
        if not rows:
            return Statistics(0, 0, 0, 0, 0)
        r = rows[0]
        return Statistics(int(r["revision"] or 0), int(r["passages"]), int(r["words"] or 0), int(r["facts"]),
                          int(r["entities"]), int(r["edges"]), int(r["stored"]))

    def text_form(self) -> TextForm:
        """The view's facts and entities and their approximate tokens (``hippo.memory.extent``)."""
        [r] = self._read("read_text_form", "sizing the reader's view")
        return TextForm(tokens=int(r["tokens"] or 0), entities=int(r["entities"]), facts=int(r["facts"]))

    def changes(self, since: int, until: int) -> list[list[str] | None] | None:
        """The nodes each write after ``since`` up to ``until`` changed (None for a write that listed
        none), or None when some of those writes left no record (hippo.memory.store_cache)."""
        rows = self._read("read_changes", "reading what writes changed", since=since, until=until)
        if len(rows) != until - since:
            return None
        return [r["nodes"] for r in rows]

    def strengths(self, ids: list[str], *, mention_weight: float = 1.0,
                  relation_weight: float = 1.0) -> dict[str, float | None]:
        """Nodes' strengths over every edge, as ``neighbours`` gives them with the edges that reach them."""
        if not ids:
            return {}
        rows = self._read("read_strengths", "reading nodes' strengths", ids=ids, mention_weight=mention_weight,
                          relation_weight=relation_weight)
        return {r["id"]: r["strength"] for r in rows}

    def revision(self) -> int:
        rows = self._read("meta_read", "reading the revision", meta=META)
        return int(rows[0]["revision"]) if rows else 0

    # -- vectors -------------------------------------------------------------------------

    def nearest(self, family: Family, queries: np.ndarray, ks: list[int], *,
                least: list[int] | None = None) -> list[list[list[Any]]]:
        """Per query row, its ``ks[i]`` best visible records as rows ``[id, cosine, ...]``, best first
        (facts: ``[id, cosine, subject id, object id, passage id, text hash]``); the index is asked
        for at least ``least[i]`` records at first (a wider search)."""
        queries = np.atleast_2d(np.asarray(queries, dtype=np.float64))
        out: list[list[list[Any]]] = [[] for _ in queries]
        least = least or [FIRST_FETCH] * len(ks)
        fetch = {i: max(2 * k, least[i], FIRST_FETCH) for i, k in enumerate(ks) if k > 0}
        while fetch:
            for i in [i for i, f in fetch.items() if f > self.max_fetch]:  # widening fell short: score exactly
                out[i] = self._exact(family, queries[i], ks[i])
                del fetch[i]
            if not fetch:
                break
            waiting = list(fetch)
            rows = self._read(f"read_nearest_{family}", f"searching {family} by vector",
                              queries=queries[waiting].tolist(), fetch=[fetch[i] for i in waiting],
                              keep=max(2 * max(ks[i] for i in waiting), KEEP), rescore=INDEX_OF[family] in self.int8)
            for row in rows:
                i = waiting[int(row["i"])]
                found = [[r[0], cosine(r[1]), *r[2:]] for r in row["found"]]
                out[i] = found[: ks[i]]
                if len(found) < ks[i] and int(row["fetched"]) >= fetch[i]:  # the index has more: widen
                    fetch[i] *= 2
                else:
                    del fetch[i]
        return out

    def _exact(self, family: Family, query: np.ndarray, k: int) -> list[list[Any]]:
        return self.exact(family, query, k)[0]

    def exact(self, family: Family, query: np.ndarray, k: int) -> tuple[list[list[Any]], float | None]:
        """Every visible record scored exactly: the ``k`` best, and the lowest cosine (None: no record).
        O(what the reader sees), one round trip."""
        rows = self._read(f"read_exact_{family}", f"scoring {family} exactly",
                          query=np.asarray(query, dtype=np.float64).tolist(), k=k)
        if not rows:
            return [], None
        found = [[r[0], cosine(r[1]), *r[2:]] for r in rows[0]["found"]]
        bottom = rows[0]["bottom"]
        return found, cosine(bottom[0][1]) if bottom else None

    def cosines(self, family: Literal["passage", "fact"], ids: list[str], query: np.ndarray) -> dict[str, float]:
        """Exact cosines of these records with ``query`` (records without a vector are left out)."""
        if not ids:
            return {}
        rows = self._read(f"read_{family}_cosines", f"scoring {family}s", ids=ids,
                          query=np.asarray(query, dtype=np.float64).tolist())
        pairs = rows[0]["scores"] if rows else []
        return {rid: cosine(score) for rid, score in pairs if score is not None}

    def facts_around(self, entities: list[str], query: np.ndarray, k: int, *,
                     exclude: list[str]) -> list[list[Any]]:
        """The ``k`` visible facts with an end among ``entities`` (none from an entity to itself) closest
        to ``query``, other than ``exclude``: ``[id, subject id, object id, passage id, text hash, cosine]``,
        best first."""
        if not entities or k <= 0:
            return []
        rows = self._read("read_facts_around", "reading the facts around entities", ids=entities,
                          exclude=exclude, query=np.asarray(query, dtype=np.float64).tolist(), k=k)
        return [[*r[:5], cosine(r[5])] for r in (rows[0]["facts"] if rows else [])]

    # -- the graph -----------------------------------------------------------------------

    def neighbours(self, passages: Owners, entities: Owners, *, everything: bool = False) -> Frontier:
        """The visible edges at a frontier of passages and entities (one push wave), by the owners'
        keys; their targets by node id. ``everything``: the caller knows the reader sees every space of
        a store with nothing forgotten (the degree counters then say what is visible)."""
        if not passages and not entities:
            return EMPTY
        everything = everything and self.spaces is None
        parts = min(self.parts, (len(passages) + len(entities)) // SPLIT_FROM + 1)
        if parts == 1:
            return Frontier.of(self._neighbours(passages, entities, everything))
        # One statement runs on one core of the server: a wide frontier is read as ``parts`` statements
        # side by side, each every ``parts``-th node, so the hubs a frontier holds spread over them. Their
        # answers become arrays once, here.
        return Frontier.of([row for rows in PARTS.map(
            lambda i: self._neighbours(passages.every(i, parts), entities.every(i, parts), everything), range(parts))
            for row in rows])

    def _neighbours(self, passages: Owners, entities: Owners, everything: bool) -> list[list[float]]:
        rows = self._read("read_neighbours", "reading a frontier's edges", everything=everything,
                          **passages.params("passage"), **entities.params("entity"))
        return rows[0]["edges"] if rows else []

    def keyed(self, keys: list[int], *, mention_weight: float = 1.0,
              relation_weight: float = 1.0) -> dict[int, tuple[str, float | None]]:
        """node id -> (record id, strength over every edge, as ``strengths`` gives it) of each node
        ``neighbours`` named."""
        if not keys:
            return {}
        rows = self._read("read_keyed_nodes", "naming a frontier's targets", keys=keys, mention_weight=mention_weight,
                          relation_weight=relation_weight)
        return {key: (rid, strength) for key, rid, strength in (rows[0]["nodes"] if rows else [])}

    def nodes(self, ids: list[str]) -> dict[str, tuple[bool, int]]:
        """id -> (is a passage, visible passages mentioning it) for the visible ones among ``ids``."""
        if not ids:
            return {}
        return {r["id"]: (bool(r["passage"]), int(r["passages"]))
                for r in self._read("read_nodes", "looking up nodes", ids=ids)}

    def entity_counts(self, ids: list[str], *, everything: bool = False) -> dict[str, int]:
        """entity id -> visible passages mentioning it. ``everything``: as for ``neighbours``."""
        if not ids:
            return {}
        return {r["id"]: int(r["passages"]) for r in self._read(
            "read_entity_counts", "counting mentions", ids=ids, everything=everything and self.spaces is None)}

    def first_passages(self, ids: list[str], *, everything: bool = False
                       ) -> dict[str, tuple[str, str | None, str | None]]:
        """entity id -> (key, title, text of the first visible passage mentioning it). ``everything``:
        as for ``neighbours``."""
        if not ids:
            return {}
        return {r["id"]: (r["key"] or "", r["title"], r["text"]) for r in self._read(
            "read_entity_names", "reading entity names", ids=ids, everything=everything and self.spaces is None)}

    def passage_facts(self, ids: list[str]) -> dict[str, list[list[str]]]:
        """Per passage, its facts in store order as [id, subject id, object id, passage id, text hash]."""
        if not ids:
            return {}
        return {r["id"]: [list(f) for f in r["facts"]]
                for r in self._read("read_passage_facts", "reading facts", ids=ids)}

    def impact(self, passage_ids: list[str]) -> tuple[list[str], list[str], dict[str, int]]:
        """What retiring these passages takes out of the reader's view (``read_impact.cypher``): the
        facts and entities that go, and the edges leaving the walk by kind."""
        [r] = self._read("read_impact", "weighing what a forget takes out", ids=list(passage_ids))
        return list(r["facts"]), list(r["entities"]), {"mention": int(r["mentions"]), "relation": int(r["relations"]),
                                                       "synonym": int(r["synonyms"])}

    def unembedded(self) -> set[tuple[VectorKind, str]]:
        """Records of every space written without a vector (``read_unembedded.cypher``)."""
        return {(r["kind"], r["id"]) for r in self._read("read_unembedded", "listing records without vectors")}

    def view_records(self) -> tuple[list[str], list[str]]:
        """Ids of the entities the view's live passages mention and of the facts read from them."""
        [r] = self._read("read_view_records", "listing the reader's entities and facts")
        return list(r["entities"]), list(r["facts"])

    def visible_passages(self) -> list[str]:
        return [r["id"] for r in self._read("read_visible_passages", "listing passages")]

    # -- words ---------------------------------------------------------------------------

    def keyword_candidates(self, query: str, terms: list[str], k: int, *,
                           everything: bool = False) -> list[tuple[str, int, list[int]]]:
        """The ``k`` best visible passages by the full-text index's own ranking (ties by seq), as (id,
        length in words, occurrences of each of ``terms``), words as BM25 counts them
        (``hippo.store.neo4j.writer.passage_words``). ``everything``: as for ``neighbours``; the
        index then hands over its best ``2k``, or more while a passage tied with the ``k``-th may
        have been left out (the statement says why)."""
        limit = 2 * k if everything and self.spaces is None else None
        while True:
            rows = self._read("read_keyword_candidates", "searching keywords", query=query, terms=terms, k=k,
                              options={} if limit is None else {"limit": limit})
            if not rows:
                return []
            [row] = rows
            if limit is None or row["returned"] < limit or row["kth"] > row["lowest"]:
                return [(pid, int(length), counts) for pid, length, counts in row["found"]]
            limit *= 4

    def document_frequencies(self, terms: list[str], cap: int, *, everything: bool = False) -> dict[str, int]:
        """Per quoted word: visible live passages holding it, counted up to ``cap``. ``everything``: as
        for ``neighbours``."""
        if not terms:
            return {}
        everything = everything and self.spaces is None
        rows = self._read("read_keyword_frequencies", "counting keywords", terms=terms, cap=cap,
                          everything=everything, options={"limit": cap} if everything else {})
        return {r["term"]: int(r["df"]) for r in rows}

    def title_candidates(self, query: str, k: int) -> list[tuple[str, str]]:
        rows = self._read("read_title_candidates", "matching titles", query=query, k=k)
        return [(r["id"], r["title"]) for r in rows]
