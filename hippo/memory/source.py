"""The read side of recall: what recall, walks and neighbourhoods read, for one reader.

``RecallSource`` names every read the online step makes, within the reader's
spaces: nearest records per family (passages, facts, entities) with the floor
of their cosines, exact cosines of given records, BM25 scores, the edges at a
frontier of nodes, the Personalized PageRank over them and its passage
read-out, and names and texts by id. Nodes (passages and entities) and fact
rows are integer handles the source hands out and reads back.

``LocalSource`` serves it from the engine's in-process derived state (graph
projection, vector and keyword indexes) and the store. A store-side source
(the next issue's Neo4j reader) serves the same calls with queries: nothing
here exposes the projection's arrays, only frontier-wise reads a remote
reader can answer (its PPR can be ``hippo.graph.ppr.push_pagerank`` over
``neighbours``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import numpy as np

from hippo.graph.edges import RELATION
from hippo.graph.ppr import Neighbours, SparseScores
from hippo.graph.scoring import Readout
from hippo.graph.view import GraphView, Solver
from hippo.memory.ahead import Ahead
from hippo.memory.names import visible_names
from hippo.memory.retrieve import keyword_vertices
from hippo.memory.state import DerivedState
from hippo.memory.titles import title_seeds
from hippo.store import Store
from hippo.store.base import Spaces

T = TypeVar("T")

# Passages a reader must see before a recall hands work to threads. Measured (p50 without embedding,
# each question asked both ways in turn): on the 54-passage sample the hand-offs cost ~1 ms of 6-7;
# on MuSiQue's 1,903 passages threads saved 1.1 ms of 14.7, on 2Wiki's 6,445 2.0 of 18.8.
THREADS_FROM = 1_000


class PerNode(Protocol):
    """A value per node, read for one node or an array of them (``counts[nodes]``)."""

    def __getitem__(self, nodes: Any) -> Any: ...


@dataclass(frozen=True)
class Nearest:
    """The records closest to a query vector, best first, and a floor of every visible one's cosine."""

    handles: np.ndarray
    scores: np.ndarray
    low: float


class RecallSource(Protocol):
    """What the online step reads, within one reader's spaces (``spaces``)."""

    spaces: Spaces

    # -- the reader's graph ------------------------------------------------------------

    @property
    def passage_total(self) -> int:
        """Visible live passages."""

    @property
    def passage_count(self) -> PerNode:
        """Per node: how many visible passages mention it (an entity's specificity)."""

    @property
    def visible_passage(self) -> PerNode:
        """Per node: whether it is a passage the reader sees."""

    def passage_nodes(self) -> np.ndarray:
        """Every visible passage (only when a caller asked for a prior on all of them)."""

    def is_passage(self, node: int) -> bool: ...

    def nodes(self, ids: list[str]) -> dict[str, int]:
        """Handles of the visible passages and entities among ``ids`` (others: as if absent)."""

    def record_ids(self, handles: list[int]) -> list[str]:
        """Ids of nodes."""

    def mentions(self, passage: int) -> np.ndarray:
        """Entity nodes a visible passage mentions."""

    def passage_facts(self, passage: int) -> list[str]:
        """Ids of the facts read from a passage."""

    def passage_fact_rows(self, passage: int) -> np.ndarray:
        """Rows of the facts read from a passage (the handles ``nearest_facts`` gives)."""

    def edges(self, frontier: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """The visible edge entries at a frontier: (index into ``frontier``, columns ``targets``,
        ``weights``, ``kinds``)."""

    def neighbours(self, frontier: np.ndarray) -> Neighbours:
        """The same entries in the shape the PPR push reads."""

    def pagerank(self, nodes: np.ndarray, weights: np.ndarray, damping: float, *, solver: Solver,
                 epsilon: float, exact_max_edges: int) -> SparseScores:
        """Personalized PageRank from the reset ``weights`` at ``nodes``, over the visible edges."""

    def passage_readout(self, scores: SparseScores, readout: Readout,
                        blend: float) -> tuple[np.ndarray, np.ndarray]:
        """The visible passages the walk reached, one score each."""

    # -- vectors, per family ---------------------------------------------------------------

    def nearest_passages(self, q: np.ndarray, k: int) -> Nearest: ...

    def nearest_facts(self, q: np.ndarray, k: int) -> Nearest:
        """Handles are fact rows."""

    def nearest_entities(self, queries: np.ndarray, k: int) -> list[tuple[np.ndarray, np.ndarray]]:
        """(cosines, entity nodes) per query row."""

    def search_passages(self, queries: np.ndarray, k: int) -> list[tuple[np.ndarray, np.ndarray]]:
        """(cosines, passage nodes) per query row: ``nearest_passages`` without the floor."""

    def facts_around(self, q: np.ndarray, entities: np.ndarray, k: int,
                     exclude: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` visible facts with an end among ``entities`` (none from an entity to itself) closest
        to ``q``, other than the rows ``exclude``: (fact rows, cosines), best first. Facts without a
        vector are left out."""

    def passage_cosines(self, q: np.ndarray, passages: np.ndarray) -> np.ndarray: ...

    def fact_cosines(self, q: np.ndarray, rows: np.ndarray) -> np.ndarray: ...

    def fact_total(self) -> int:
        """Facts with a vector (visible or not): 0 means fact search has nothing to find."""

    def entity_total(self) -> int:
        """Entities with a vector."""

    def fact_keys(self, rows: np.ndarray) -> np.ndarray:
        """Per fact row, a key equal for equal texts (dedup of a fact read twice)."""

    def fact_ends(self, row: int) -> list[int]:
        """The subject and object nodes of a fact row."""

    def fact_ids(self, rows: list[int]) -> list[str]: ...

    def fact_passages(self, rows: list[int]) -> list[str]:
        """Ids of the passages fact rows were read from."""

    # -- words -------------------------------------------------------------------------

    def read_ahead(self, query: str, keyword_limit: int) -> None:
        """A hint at the start of a recall: ``keyword_scores(query, keyword_limit)`` (0: not) and
        ``title_seeds(query)`` will be asked; a remote source may start those reads now."""

    def search_ahead(self, family: str, queries: np.ndarray, k: int) -> None:
        """A hint: ``nearest_<family>`` will be asked for ``k`` (passages, facts: for each row of
        ``queries``; entities: all rows in one call); a remote source may start the searches now."""

    def aside(self, read: Callable[..., T], *args: Any) -> Callable[[], T]:
        """``read(*args)``, run on a thread while the recall goes on when this source can (``read``
        reads only through the source, and gives out no handle), else now; call what this returns
        for the answer."""

    def keyword_scores(self, query: str, limit: int) -> dict[int, float]:
        """BM25 of the ``limit`` best visible passages, by passage node. In process, statistics
        come from the reader's spaces only (``hippo.memory.keywords``); a store-side source reads
        the store's full-text index (``Store.keyword_search``) and must keep that rule."""

    def title_seeds(self, query: str) -> dict[int, float]:
        """Visible passages whose title the query names, with their share of the title weight."""

    def entity_names(self, ids: list[str]) -> dict[str, str]:
        """Entity names as the reader's own passages spell them (``hippo.memory.names``)."""

    def fact_texts(self, ids: list[str]) -> dict[str, str]: ...


def answered(read: Callable[..., T], *args: Any) -> Callable[[], T]:
    """``read(*args)`` run now, given back as ``RecallSource.aside`` gives its answers."""
    answer = read(*args)
    return lambda: answer


class LocalSource:
    """``RecallSource`` over the engine's in-process derived state (read inside ``Engine.reading``).

    ``state`` and ``view`` are the engine's: in-process callers (plain retrieval) read them.
    With ``threads`` above 1, for a reader who sees at least ``THREADS_FROM`` passages, a recall's
    fact and entity searches run at once on threads (``search_ahead``: faiss lets go of the GIL)
    while the recall's own thread scores BM25 and searches passages, and its seeds and clues are described
    (``aside``) while it walks. Whoever makes one calls ``settle`` before the read section ends, so
    no read outlives it.
    """

    def __init__(self, state: DerivedState, store: Store, spaces: Spaces, threads: int = 1) -> None:
        self.state, self.store, self.spaces = state, store, spaces
        self.view: GraphView = state.projection.view(spaces)
        self.threads = threads if self.view.passage_total >= THREADS_FROM else 1
        self.ahead = Ahead()

    @property
    def passage_total(self) -> int:
        return self.view.passage_total

    @property
    def passage_count(self) -> PerNode:
        return self.view.passage_count

    @property
    def visible_passage(self) -> PerNode:
        return self.view.visible_passage

    def passage_nodes(self) -> np.ndarray:
        return self.view.passage_vertices

    def is_passage(self, node: int) -> bool:
        return bool(self.state.projection.is_passage[node])

    def nodes(self, ids: list[str]) -> dict[str, int]:
        vertex = self.state.projection.vertex
        held = [(rid, v) for rid in ids if (v := vertex.get(rid)) is not None]
        if not held:
            return {}
        # one look at the view for all (a recall's hits ask for ~12: one at a time was 0.3 ms)
        visible = self.view.visible(np.fromiter((v for _, v in held), dtype=np.int64, count=len(held)))
        return {rid: v for (rid, v), seen in zip(held, visible.tolist(), strict=True) if seen}

    def record_ids(self, handles: list[int]) -> list[str]:
        return self.state.projection.record_ids.take(handles)

    def mentions(self, passage: int) -> np.ndarray:
        return self.view.mentions(passage)

    def passage_facts(self, passage: int) -> list[str]:
        p = self.state.projection
        return p.fact_ids.take(p.facts_of(passage))

    def passage_fact_rows(self, passage: int) -> np.ndarray:
        return self.state.projection.facts_of(passage)

    def edges(self, frontier: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        return self.view.entries(frontier)

    def neighbours(self, frontier: np.ndarray) -> Neighbours:
        return self.view.neighbours(frontier)

    def pagerank(self, nodes: np.ndarray, weights: np.ndarray, damping: float, *, solver: Solver,
                 epsilon: float, exact_max_edges: int) -> SparseScores:
        return self.view.pagerank(nodes, weights, damping, solver=solver, epsilon=epsilon,
                                  exact_max_edges=exact_max_edges)

    def passage_readout(self, scores: SparseScores, readout: Readout,
                        blend: float) -> tuple[np.ndarray, np.ndarray]:
        return self.view.passage_scores(scores, readout, blend)

    def nearest_passages(self, q: np.ndarray, k: int) -> Nearest:
        return self.ahead.take(*self._search("passages", q, k))

    def nearest_facts(self, q: np.ndarray, k: int) -> Nearest:
        return self.ahead.take(*self._search("facts", q, k))

    def nearest_entities(self, queries: np.ndarray, k: int) -> list[tuple[np.ndarray, np.ndarray]]:
        return self.ahead.take(*self._search("entities", queries, k))

    def _search(self, family: str, q: np.ndarray, k: int) -> tuple[Any, ...]:
        """(the key ``search_ahead`` starts it under and ``nearest_<family>`` takes it by, the read,
        its arguments)."""
        if family == "entities":
            return (family, q.tobytes(), k), self._search_entities, q, k
        return (family, q.tobytes(), k), self._nearest, family, q, k

    def _nearest(self, family: str, q: np.ndarray, k: int) -> Nearest:
        scores, handles, low = getattr(self.state, family).top_and_lowest(q, k, self.view.codes)
        return Nearest(handles, scores, low)

    def _search_entities(self, queries: np.ndarray, k: int) -> list[tuple[np.ndarray, np.ndarray]]:
        return self.state.entities.search(queries, k, self.view.codes)

    def search_passages(self, queries: np.ndarray, k: int) -> list[tuple[np.ndarray, np.ndarray]]:
        return self.state.passages.search(queries, k, self.view.codes)

    def facts_around(self, q: np.ndarray, entities: np.ndarray, k: int,
                     exclude: list[int]) -> tuple[np.ndarray, np.ndarray]:
        p, ends, left_out = self.state.projection, set(np.asarray(entities).tolist()), set(exclude)
        _, columns = self.view.entries(np.asarray(entities, dtype=np.int64))  # the reader's relation edges
        passages = np.unique(columns["via"][columns["kinds"] == RELATION]).tolist()
        rows = np.array(sorted({r for via in passages for r in p.facts_of(int(via)).tolist()
                                if r not in left_out and p.fact_subject[r] != p.fact_object[r]
                                and (p.fact_subject[r] in ends or p.fact_object[r] in ends)}), dtype=np.int64)
        rows = rows[self.state.facts.has(rows)] if len(rows) else rows
        if not len(rows):
            return rows, np.zeros(0, dtype=np.float32)
        scores, ids = self.state.facts.scores(q, rows), [self.state.fact_ids[r] for r in rows.tolist()]
        best = np.lexsort((ids, -scores))[:k]  # ties (one triple read twice) by id, as the store orders them
        return rows[best], scores[best]

    def passage_cosines(self, q: np.ndarray, passages: np.ndarray) -> np.ndarray:
        return self.state.passages.scores(q, passages)

    def fact_cosines(self, q: np.ndarray, rows: np.ndarray) -> np.ndarray:
        return self.state.facts.scores(q, rows)

    def fact_total(self) -> int:
        return len(self.state.facts)

    def entity_total(self) -> int:
        return len(self.state.entities)

    def fact_keys(self, rows: np.ndarray) -> np.ndarray:
        return self.state.facts.key_of(rows)

    def fact_ends(self, row: int) -> list[int]:
        return self.state.fact_vertices(row)

    def fact_ids(self, rows: list[int]) -> list[str]:
        ids = self.state.fact_ids
        return [ids[row] for row in rows]

    def fact_passages(self, rows: list[int]) -> list[str]:
        ends = self.state.fact_ends
        return [ends[row][2] for row in rows]

    def read_ahead(self, query: str, keyword_limit: int) -> None:
        pass  # everything is in memory

    def search_ahead(self, family: str, queries: np.ndarray, k: int) -> None:
        # The passage search is the first one taken, right after BM25: it runs then, on this thread.
        # These reads are bound by memory, not by cores: a third one beside the fact and entity
        # searches on 2 cores slowed them more than it gained (seed stage p50, each way in turn:
        # 100k passages 5.8 -> 4.9 ms, 2Wiki 3.8 -> 3.4).
        if self.threads < 2 or family == "passages":
            return
        for q in [queries] if family == "entities" else np.atleast_2d(queries):  # entities: all rows at once
            self.ahead.start(*self._search(family, q, k))

    def aside(self, read: Callable[..., T], *args: Any) -> Callable[[], T]:
        return self.ahead.later(read, *args) if self.threads > 1 else answered(read, *args)

    def settle(self) -> None:
        """Wait for the reads started on threads that were never asked for (a recall that stopped early)."""
        self.ahead.settle()

    def keyword_scores(self, query: str, limit: int) -> dict[int, float]:
        return dict(keyword_vertices(self.state, query, self.spaces, limit))

    def title_seeds(self, query: str) -> dict[int, float]:
        return title_seeds(self.state.titles, query, self.view.visible_passage)

    def entity_names(self, ids: list[str]) -> dict[str, str]:
        return visible_names(self.store, self.state.projection, self.view, ids)

    def fact_texts(self, ids: list[str]) -> dict[str, str]:
        return {f.id: f.text for f in self.store.facts(ids)}
