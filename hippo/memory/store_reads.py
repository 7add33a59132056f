"""Store-side read mode (``settings.neo4j_read = "store"``): one ``StoreSource`` per recall.

What stays in the process between recalls is bounded by settings, not by the
graph: the reader's statistics (live passage count, their length, vector
counts) per set of readable spaces, at most ``STATISTICS`` of them, each for one
store revision, and the edges recalls fetched (``ReaderCache``) for at most
``CACHES`` of them, moved to a new revision without what the writes since changed.
Every recall reads the revision first (one round trip), so a write committed by
any process is seen by the next recall. Beside them, the live spaces, for one
revision.
"""

from __future__ import annotations

import threading
from collections import Counter, OrderedDict
from dataclasses import dataclass

from hippo.config import Settings
from hippo.memory.kept import ByRevision
from hippo.memory.store_cache import ReaderCache
from hippo.memory.store_source import StoreSource
from hippo.store import Store
from hippo.store.base import Spaces
from hippo.store.neo4j.reader import Neo4jReader, Statistics

STATISTICS = 64  # sets of readable spaces whose statistics are kept
CACHES = 4  # sets of readable spaces whose fetched edges are kept (each up to neo4j_read_cache nodes)


@dataclass(frozen=True)
class _Weighed:
    """A reader's changes and strengths as a moving cache reads them: weighted by the settings."""

    reader: Neo4jReader
    settings: Settings

    def changes(self, since: int, until: int) -> list[list[str] | None] | None:
        return self.reader.changes(since, until)

    def strengths(self, ids: list[str]) -> dict[str, float | None]:
        s = self.settings
        return self.reader.strengths(ids, mention_weight=s.mention_weight, relation_weight=s.relation_weight)


class StoreReads:
    """Opens the store-side source of each recall."""

    def __init__(self, store: Store, settings: Settings) -> None:
        self.store, self.settings = store, settings
        self._statistics: ByRevision[Spaces, Statistics] = ByRevision(STATISTICS)
        self._caches: OrderedDict[Spaces, ReaderCache] = OrderedDict()
        self._lock = threading.Lock()
        self._sources: list[StoreSource] = []  # the latest few, for ``round_trips`` and ``statements``
        self._done_calls: Counter[str] = Counter()  # statements of sources no longer in that list
        self._done_spent: Counter[str] = Counter()
        self._live: tuple[int, frozenset[str]] | None = None

    @property
    def round_trips(self) -> int:
        """Statements sent to the store by every recall so far (what a remote read costs)."""
        return sum(calls for calls, _ in self.statements().values())

    def statements(self) -> dict[str, tuple[int, float]]:
        """Per statement, how often every recall so far sent it and the seconds it waited in all
        (reads started ahead overlap, so the seconds add up to more than the recalls took)."""
        with self._lock:
            calls, spent = Counter(self._done_calls), Counter(self._done_spent)
            for source in self._sources:
                more_calls, more_spent = source.reader.counts()
                calls.update(more_calls)
                spent.update(more_spent)
        return {name: (calls[name], spent[name]) for name in calls}

    @classmethod
    def of(cls, store: Store, settings: Settings) -> StoreReads | None:
        """The store-side reads of a store that offers them, when the settings ask for them."""
        if settings.neo4j_read != "store" or not hasattr(store, "reader"):
            return None
        return cls(store, settings)

    def live_spaces(self) -> frozenset[str]:
        """Every space holding a live passage: one revision read, and one scan when it moved."""
        revision = self.store.revision()
        live = self._live
        if live is None or live[0] != revision:
            live = self._live = (revision, self.store.live_spaces())  # type: ignore[attr-defined]
        return live[1]

    def graph_stats(self) -> dict[str, int]:
        """``Projection.stats`` of the graph in the store, counted there."""
        return self.store.graph_counts()  # type: ignore[attr-defined]

    def source(self, spaces: Spaces) -> StoreSource:
        s = self.settings
        reader = self.store.reader(spaces, max_fetch=s.neo4j_read_fetch,  # type: ignore[attr-defined]
                                   parts=s.neo4j_read_parts)
        revision = reader.revision()
        statistics = self._statistics.get(spaces, revision, reader.statistics)
        cache = None
        if s.neo4j_read_cache:
            with self._lock:
                cache = self._caches.pop(spaces, None) or ReaderCache(s.neo4j_read_cache, revision,
                                                                         s.neo4j_read_nodes)
                cache = self._caches[spaces] = cache.fresh(revision, _Weighed(reader, s))
                while len(self._caches) > CACHES:
                    self._caches.popitem(last=False)
        source = StoreSource(reader, self.store, spaces, statistics, capacity=s.neo4j_read_nodes, cache=cache,
                             exact_max=s.neo4j_read_exact,
                             relation_weight=s.relation_weight, mention_weight=s.mention_weight)
        with self._lock:
            self._sources.append(source)
            while len(self._sources) > 8:
                done_calls, done_spent = self._sources.pop(0).reader.counts()
                self._done_calls.update(done_calls)
                self._done_spent.update(done_spent)
        return source
