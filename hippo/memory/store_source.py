"""``StoreSource``: the ``RecallSource`` served from the store by queries (``HIPPO_NEO4J_READ=store``).

Nothing of the graph is kept in the process beyond bounded caches: one source per recall holds the
handles of the nodes and facts that recall touched (``NodeTable``, at most ``neo4j_read_nodes``), and
the recalls of one reader (one set of spaces) share the visible edges they fetched (``ReaderCache``, at
most ``neo4j_read_cache`` nodes, valid for one store revision). What it reads, through a
``hippo.store.neo4j.reader.Neo4jReader``:

- candidates per family from the vector indexes, visible ones only, widened until the true top k is
  found (the reader's docstring says how); the floor's search as wide as in process (``min_rerank``);
- keyword scores: the full-text index proposes candidates, BM25 over the reader's own statistics (``store_words``);
- PPR: ``hippo.graph.ppr.push_pagerank`` over ``neighbours``, with the in-process weights (relation and
  mention weights, synonym scores): a wave pushes the nodes whose edges this recall read first, and
  reads the others' in one round trip once none are; its targets come by node id, and those the
  reader's cache has not met are named in one more (``named_edges``). A node's strength only schedules
  pushes. For a reader of every space in a store with nothing forgotten it is, as in process, its
  strength over every edge (the degree counters, learnt with its name), and a node that walk would not
  push is never read (at 100k passages, a quarter of the nodes). For any other reader it is the sum of
  its visible edges once fetched, and 1 before (a lower bound), so that walk depends on what the reader
  sees alone: a hidden or forgotten passage, or whether one exists, moves nothing. On a small graph
  (``ppr_exact_max_edges``), as in process, the exact power iteration over what the reset can reach;
- names, texts, counts, mentions and facts by id.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import sparse

from hippo.graph.ppr import Neighbours, SparseScores, Transition, power_pagerank, push_pagerank
from hippo.graph.scoring import Readout, passage_mass
from hippo.graph.view import Solver
from hippo.memory.ahead import Ahead
from hippo.memory.ann import AnnSettings
from hippo.memory.names import spelled_name
from hippo.memory.source import Nearest, answered
from hippo.memory.store_cache import EdgeCache, Fetched, NodeTable, PerNodeLookup, ReaderCache
from hippo.memory.store_names import named_edges
from hippo.memory.store_words import keyword_scores, start_keyword_reads, title_seeds
from hippo.store import Store
from hippo.store.base import Spaces
from hippo.store.neo4j.reader import FIRST_FETCH, WIDE_FETCH, Neo4jReader, Statistics


class StoreSource:
    """``RecallSource`` over a ``Neo4jReader``, for one recall of one reader."""

    def __init__(self, reader: Neo4jReader, store: Store, spaces: Spaces, statistics: Statistics, *,
                 capacity: int, cache: ReaderCache | None = None, exact_max: int = 0,
                 relation_weight: float = 1.0, mention_weight: float = 1.0) -> None:
        self.reader, self.store, self.spaces, self.statistics = reader, store, spaces, statistics
        self.table = NodeTable(capacity, cache.names if cache is not None else None)
        self.cache, self.exact_max = cache, exact_max
        self.relation_weight, self.mention_weight = relation_weight, mention_weight
        self._fetched = Fetched()  # by handle
        self._edges = cache.edges if cache is not None else EdgeCache()  # by name
        self._frequencies: dict[str, int] = cache.frequencies if cache is not None else {}  # BM25's, by word
        self._strength = np.ones(0)  # by handle: the sum of its visible edges once fetched, else 1
        self._total = np.zeros(0)  # by handle: its strength over every edge once read, else NaN
        self._want_counts: set[int] = set()
        self._cosines: dict[bytes, dict[int, float]] = {}
        self.fact_rows: list[tuple[str, int, int, str, str]] = []  # id, subject, object, passage id, hash
        self._fact_row: dict[str, int] = {}
        self._keys: dict[str, int] = {}
        self.ahead = Ahead()  # reads started by ``read_ahead`` and ``search_ahead``

    # -- the reader's graph ------------------------------------------------------------

    @property
    def passage_total(self) -> int:
        return self.statistics.passages

    @property
    def passage_count(self) -> PerNodeLookup:
        return PerNodeLookup(self._counts)

    @property
    def visible_passage(self) -> PerNodeLookup:
        return PerNodeLookup(lambda nodes: self.table.passage[nodes])

    def passage_nodes(self) -> np.ndarray:
        return self.table.handles(self.reader.visible_passages(), True)

    def is_passage(self, node: int) -> bool:
        return bool(self.table.passage[node])

    def nodes(self, ids: list[str]) -> dict[str, int]:
        found: dict[str, int] = {}
        ask = []
        for rid in ids:
            h = self.table.find(rid)
            if h is not None and (self.table.passage[h] or self.table.count.get(h, 0) > 0):
                found[rid] = h
            else:
                ask.append(rid)
        for rid, (passage, count) in self.reader.nodes(list(dict.fromkeys(ask))).items():
            h = self.table.handle(rid, passage)
            if not passage:
                self.table.count[h] = count
            found[rid] = h
        return {rid: found[rid] for rid in ids if rid in found}

    def record_ids(self, handles: list[int]) -> list[str]:
        names, named = self.table.names.ids, self.table.named
        return [names[n] for n in named[np.asarray(handles, dtype=np.int64)].tolist()]

    def _counts(self, nodes: np.ndarray) -> np.ndarray:
        count, passage, ids = self.table.count, self.table.passage, self.table.ids
        missing = [h for h in nodes.tolist() if h not in count and not passage[h]]
        if missing:
            ask = sorted(set(missing) | {h for h in self._want_counts if h not in count})
            # an entity whose edges a recall of this reader fetched at this revision was counted then
            known = self._edges.passage_counts(self.table.named[np.array(ask, dtype=np.int64)]).tolist()
            unknown = [ids[h] for h, c in zip(ask, known, strict=True) if c < 0]
            found = self.reader.entity_counts(unknown, everything=self._sees_everything)
            for h, c in zip(ask, known, strict=True):
                count[h] = c if c >= 0 else found.get(ids[h], 0)
            self._want_counts.clear()
        return np.array([0 if passage[h] else count[h] for h in nodes.tolist()], dtype=np.float64)

    def _fetch(self, nodes: np.ndarray) -> None:
        """The visible edges of the nodes not fetched before: those no recall of this reader fetched
        in one round trip, then all of them from the reader's ``EdgeCache`` by array operations."""
        missing = self._fetched.missing(np.asarray(nodes, dtype=np.int64))
        if not len(missing):
            return
        t = self.table
        names = t.named[missing]
        ask = self._edges.unknown(names)
        if len(ask):
            found = self.reader.neighbours(*t.names.owners(ask), everything=self._sees_everything)
            self._edges.add(ask, *named_edges(t.names, self._edges, ask, found, self.reader.keyed, self.mention_weight,
                                              self.relation_weight))
        lengths, targets, weights, kinds, totals, strength, passages = self._edges.gather(names)
        # one lookup for every target of the wave; handles are still numbered in the order met
        handles = t.of_names(targets)
        self._fetched.add(missing, lengths, handles, weights, kinds)
        entity = ~t.passage[missing]
        t.count.update(zip(missing[entity].tolist(), passages[entity].tolist(), strict=True))
        if len(self._strength) < t.size:
            grow = max(t.size, 1024)
            self._strength = np.concatenate([self._strength, np.ones(grow)])
            self._total = np.concatenate([self._total, np.full(grow, np.nan)])
        self._strength[missing] = strength
        self._total[handles] = totals  # learnt from the edges this recall read: the same with a cold cache

    def mentions(self, passage: int) -> np.ndarray:
        if not self.table.passage[passage]:
            return np.zeros(0, dtype=np.int64)
        self._fetch(np.array([passage]))
        return self._fetched.targets_of(passage)

    def passage_facts(self, passage: int) -> list[str]:
        return self.fact_ids(self.passage_fact_rows(passage).tolist())

    def passage_fact_rows(self, passage: int) -> np.ndarray:
        pid = self.table.ids[passage]
        facts = self.reader.passage_facts([pid]).get(pid, [])
        return self._facts(facts)

    def edges(self, frontier: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        frontier = np.asarray(frontier, dtype=np.int64)
        self._fetch(frontier)
        owners, targets, weights, kinds = self._fetched.of(frontier)
        return owners, {"targets": targets, "weights": weights, "kinds": kinds}

    def neighbours(self, frontier: np.ndarray) -> Neighbours:
        owners, columns = self.edges(frontier)
        return Neighbours(owners=owners, targets=columns["targets"], weights=columns["weights"])

    def local(self, vertices: np.ndarray) -> np.ndarray:  # ``RemoteAdjacency``; not the reader's cache, which
        return self._fetched.has(vertices)  # would make an answer depend on what other recalls read

    @property
    def vertex_count(self) -> int:  # ``hippo.graph.ppr.Adjacency``: handles are below the table's capacity
        return self.table.capacity

    def strength(self, vertices: np.ndarray) -> np.ndarray:
        """What schedules pushes (the module's docstring says why it differs by reader)."""
        vertices = np.asarray(vertices, dtype=np.int64)
        out = np.ones(len(vertices))
        known = vertices < len(self._strength)
        out[known] = self._strength[vertices[known]]
        if self._sees_everything:
            total = np.full(len(vertices), np.nan)
            total[known] = self._total[vertices[known]]
            out = np.where(np.isnan(total), out, total)
        return out

    @property
    def _sees_everything(self) -> bool:
        """A reader of every space in a store with nothing forgotten: nothing is hidden from it."""
        return self.spaces is None and self.statistics.whole

    def pagerank(self, nodes: np.ndarray, weights: np.ndarray, damping: float, *, solver: Solver,
                 epsilon: float, exact_max_edges: int) -> SparseScores:
        """Local push; on a graph of at most ``exact_max_edges`` edges (or when asked), as in process,
        the exact power iteration over the part of the visible graph the reset can reach (fetched
        wave by wave: PPR mass never leaves it)."""
        if solver == "exact" or (solver == "auto" and self.statistics.edges <= exact_max_edges):
            return self._exact_pagerank(np.asarray(nodes, dtype=np.int64), np.asarray(weights, dtype=np.float64),
                                        damping)
        return push_pagerank(self, nodes, weights, damping, epsilon)

    def _exact_pagerank(self, nodes: np.ndarray, weights: np.ndarray, damping: float) -> SparseScores:
        reached = list(dict.fromkeys(nodes.tolist()))
        seen, frontier = set(reached), reached
        while frontier:
            self._fetch(np.array(frontier, dtype=np.int64))
            fresh = [*dict.fromkeys(t for h in frontier for t in self._fetched.targets_of(h).tolist() if t not in seen)]
            seen.update(fresh)
            reached += fresh
            frontier = fresh
        order = np.array(sorted(reached), dtype=np.int64)
        owners, columns = self.edges(order)
        at = np.searchsorted(order, columns["targets"])
        m = len(order)
        adjacency = sparse.csr_matrix((columns["weights"], (owners, at)), shape=(m, m))
        reset = np.zeros(m)
        np.add.at(reset, np.searchsorted(order, nodes), np.maximum(weights, 0.0))
        scores = power_pagerank(Transition.of_adjacency(adjacency), reset, damping)
        keep = scores > 0
        return SparseScores(vertices=order[keep], scores=scores[keep], pushes=m, edges=len(owners))

    def passage_readout(self, scores: SparseScores, readout: Readout,
                        blend: float) -> tuple[np.ndarray, np.ndarray]:
        reached = scores.vertices
        passages = np.flatnonzero(self.table.passage[reached])
        m = len(reached)
        if readout == "passage" or not len(passages):
            return reached[passages], scores.scores[passages]
        owners, columns = self.edges(reached[passages])
        at = np.minimum(np.searchsorted(reached, columns["targets"]), m - 1)
        inside = reached[at] == columns["targets"]
        rows, cols = passages[owners[inside]], at[inside]
        incidence = sparse.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(m, m))
        strength = np.zeros(m)
        read = np.unique(incidence.indices)
        self._fetch(reached[read])
        strength[read] = self._strength[reached[read]]
        return reached[passages], passage_mass(scores.scores, passages, incidence, readout, blend, strength=strength)

    # -- vectors -------------------------------------------------------------------------

    @property
    def _exact(self) -> bool:
        """A reader of at most ``exact_max`` passages (``neo4j_read_exact``) is served by exact scans of
        what it sees, as the in-process index searches small shards exactly. The choice depends on
        what the reader sees only, so a hidden space cannot change which answers it gets."""
        return self.statistics.passages <= self.exact_max

    def _nearest(self, family: str, q: np.ndarray, k: int) -> tuple[list[list[Any]], float]:
        """The ``k`` best and the floor of every visible record's cosine: exactly for a small reader,
        else from the vector index (the floor: the best hit for ``-q``, which an approximate index may
        miss by a little)."""
        q = np.asarray(q, dtype=np.float64)
        return self.ahead.take((family, q.tobytes(), k), self.rows, family, q, k)

    def rows(self, family: str, q: np.ndarray, k: int) -> tuple[list[list[Any]], float]:
        """Uncached: the ``k`` best rows ``[id, cosine, ...]`` and the floor."""
        if self._exact:
            top, low = self.reader.exact(family, q, k)  # type: ignore[arg-type]
            return top, low if low is not None else 0.0
        top, bottom = self.reader.nearest(family, np.vstack([q, -q]), [k, 1],  # type: ignore[arg-type]
                                          least=[FIRST_FETCH, AnnSettings.min_rerank])
        return top, -float(bottom[0][1]) if bottom else 0.0

    def nearest_passages(self, q: np.ndarray, k: int) -> Nearest:
        top, low = self._nearest("passages", q, k)
        handles = self.table.handles([r[0] for r in top], True)
        scores = np.array([r[1] for r in top], dtype=np.float32)
        self._cosines.setdefault(np.asarray(q, np.float32).tobytes(), {}).update(
            zip(handles.tolist(), scores.tolist(), strict=True))
        return Nearest(handles, scores, low)

    def nearest_facts(self, q: np.ndarray, k: int) -> Nearest:
        top, low = self._nearest("facts", q, k)
        rows = self._facts([[r[0], *r[2:]] for r in top])
        return Nearest(rows, np.array([r[1] for r in top], dtype=np.float32), low)

    def _facts(self, facts: list[list[Any]]) -> np.ndarray:
        """The rows of facts read as ``[id, subject id, object id, passage id, text hash]``, new ones
        added; their ends' handles in one lookup (numbered as one by one, subject first)."""
        ends = self.table.handles([e for f in facts for e in f[1:3]], False).reshape(-1, 2).tolist()
        rows = []
        for (fid, _, _, passage, key), (s, o) in zip(facts, ends, strict=True):
            row = self._fact_row.get(fid)
            if row is None:
                self._want_counts.update((s, o))
                row = self._fact_row[fid] = len(self.fact_rows)
                self.fact_rows.append((fid, s, o, passage, key))
            rows.append(row)
        return np.array(rows, dtype=np.int64)

    def _nearest_entities(self, queries: np.ndarray, k: int) -> list[list[list[Any]]]:
        return self.ahead.take(("entities", queries.tobytes(), k), self.search_rows, "entities", queries, k)

    def search_rows(self, family: str, queries: np.ndarray, k: int, least: int = FIRST_FETCH) -> list[list[list[Any]]]:
        """Uncached, without the floor: per query row, the ``k`` best rows ``[id, cosine, ...]``, the index
        asked for ``least`` records at first (a write's searches too)."""
        if self._exact:
            return [self.reader.exact(family, x, k)[0] for x in queries]  # type: ignore[arg-type]
        ks, fetch = [k] * len(queries), [least] * len(queries)
        return self.reader.nearest(family, queries, ks, least=fetch)  # type: ignore[arg-type]

    def nearest_entities(self, queries: np.ndarray, k: int) -> list[tuple[np.ndarray, np.ndarray]]:
        out = []
        for found in self._nearest_entities(np.atleast_2d(np.asarray(queries, dtype=np.float64)), k):
            handles = self.table.handles([r[0] for r in found], False)
            self._want_counts.update(handles.tolist())
            out.append((np.array([r[1] for r in found], dtype=np.float32), handles))
        return out

    def search_passages(self, queries: np.ndarray, k: int) -> list[tuple[np.ndarray, np.ndarray]]:
        found = self.search_rows("passages", np.atleast_2d(np.asarray(queries, dtype=np.float64)), k, WIDE_FETCH)
        return [(np.array([r[1] for r in rows], dtype=np.float32), self.table.handles([r[0] for r in rows], True))
                for rows in found]

    def facts_around(self, q: np.ndarray, entities: np.ndarray, k: int,
                     exclude: list[int]) -> tuple[np.ndarray, np.ndarray]:
        found = self.reader.facts_around(self.record_ids(np.asarray(entities).tolist()), q, k,
                                         exclude=self.fact_ids(exclude))
        return (self._facts([r[:5] for r in found]),
                np.array([r[5] for r in found], dtype=np.float32))

    def passage_cosines(self, q: np.ndarray, passages: np.ndarray) -> np.ndarray:
        known = self._cosines.setdefault(np.asarray(q, np.float32).tobytes(), {})
        passages = np.asarray(passages, dtype=np.int64)
        missing = [h for h in dict.fromkeys(passages.tolist()) if h not in known]
        if missing:
            ids = self.record_ids(missing)
            found = self.reader.cosines("passage", ids, q)
            for h, rid in zip(missing, ids, strict=True):
                known[h] = found.get(rid, -np.inf)
        return np.array([known[h] for h in passages.tolist()], dtype=np.float32)

    def fact_cosines(self, q: np.ndarray, rows: np.ndarray) -> np.ndarray:
        ids = self.fact_ids(np.asarray(rows).tolist())
        found = self.reader.cosines("fact", ids, q)
        return np.array([found.get(fid, -np.inf) for fid in ids], dtype=np.float32)

    def fact_total(self) -> int:
        return self.statistics.facts

    def entity_total(self) -> int:
        return self.statistics.entities

    def fact_keys(self, rows: np.ndarray) -> np.ndarray:
        keys = [self.fact_rows[r][4] for r in np.asarray(rows).tolist()]
        return np.array([self._keys.setdefault(key, len(self._keys)) for key in keys], dtype=np.int64)

    def fact_ends(self, row: int) -> list[int]:
        _, s, o, _, _ = self.fact_rows[row]
        return [s, o]

    def fact_ids(self, rows: list[int]) -> list[str]:
        return [self.fact_rows[r][0] for r in rows]

    def fact_passages(self, rows: list[int]) -> list[str]:
        return [self.fact_rows[r][3] for r in rows]

    # -- words ---------------------------------------------------------------------------

    def read_ahead(self, query: str, keyword_limit: int) -> None:
        """Start the reads that need only the query's text on a thread, so Neo4j answers them while
        this recall parses and embeds the query and searches the vector indexes; ``keyword_scores``
        and ``title_seeds`` take their answers (or their errors). Only the reads run there: handles
        are given out on the recall's own thread."""
        start_keyword_reads(self.ahead, self.reader, self.statistics, query, keyword_limit, self._frequencies)
        self.ahead.start(("titles", query), title_seeds, self.reader, query)

    def search_ahead(self, family: str, queries: np.ndarray, k: int) -> None:
        """Start the vector searches ``nearest_<family>`` will be asked for (each row of ``queries``;
        entities: all rows at once) on threads: the three families' searches then overlap."""
        queries = np.atleast_2d(np.asarray(queries, dtype=np.float64))
        if family == "entities":
            self.ahead.start((family, queries.tobytes(), k), self.search_rows, family, queries, k)
            return
        for q in queries:
            self.ahead.start((family, q.tobytes(), k), self.rows, family, q, k)

    aside = staticmethod(answered)  # run now: a read may give out handles, which only the recall's thread does

    def keyword_scores(self, query: str, limit: int) -> dict[int, float]:
        scored = keyword_scores(self.reader, self.statistics, query, limit, self._frequencies, self.ahead)
        handles = self.table.handles([pid for pid, _ in scored], True).tolist()
        return dict(zip(handles, (score for _, score in scored), strict=True))

    def title_seeds(self, query: str) -> dict[int, float]:
        found = self.ahead.take(("titles", query), title_seeds, self.reader, query)
        return dict(zip(self.table.handles(list(found), True).tolist(), found.values(), strict=True))

    def entity_names(self, ids: list[str]) -> dict[str, str]:
        firsts = self.reader.first_passages(list(dict.fromkeys(ids)), everything=self._sees_everything)
        return {eid: spelled_name(key, title, text) for eid, (key, title, text) in firsts.items()}

    def fact_texts(self, ids: list[str]) -> dict[str, str]:
        return {f.id: f.text for f in self.store.facts(ids)}
