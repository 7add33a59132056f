"""What recall reads from outside the derived state: entity names and fact texts by id, and
keyword scores, all within the reader's spaces (``hippo.memory.recall.Lookup``)."""

from __future__ import annotations

from hippo.memory.names import visible_names
from hippo.memory.retrieve import keyword_ranking
from hippo.memory.state import DerivedState
from hippo.store import Store


class StoreLookup:
    def __init__(self, store: Store, state: DerivedState, spaces: frozenset[str] | None) -> None:
        self._store = store
        self._state = state
        self._spaces = spaces

    def entity_names(self, ids: list[str]) -> dict[str, str]:
        projection = self._state.projection
        return visible_names(self._store, projection, projection.view(self._spaces), ids)

    def fact_texts(self, ids: list[str]) -> dict[str, str]:
        return {f.id: f.text for f in self._store.facts(ids)}

    def keyword_scores(self, query: str, limit: int, spaces: frozenset[str] | None) -> dict[str, float]:
        return dict(keyword_ranking(self._state, query, spaces, limit))
