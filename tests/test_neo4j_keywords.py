"""Store-side BM25 reads against a real Neo4j: a read that Lucene stops early answers as one it does not."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import neo4j
import pytest

from hippo import Memory, Settings
from hippo.memory.source import LocalSource
from hippo.store.neo4j import Neo4jStore
from hippo.store.neo4j.reader import Neo4jReader

pytestmark = pytest.mark.neo4j


def test_a_keyword_read_stopped_early_by_lucene_keeps_the_ties_it_would_have_kept(
        neo4j_server: dict[str, str], neo4j_wipe: Callable[[], None], embedder: Any):
    """Forty passages that score alike: Lucene breaks their tie by its document order, the read by
    seq. The first ten are given new document ids (their words written again), after every other's,
    so a limit that stopped at Lucene's first ties would keep the wrong ones."""
    neo4j_wipe()
    with Memory(Neo4jStore(neo4j_server["uri"], neo4j_server["user"], neo4j_server["password"]),
                embedder=embedder) as memory:
        memory.index([{"title": f"Tally {i}", "text": "Orvell tallies the brine casks."} for i in range(40)])
    with neo4j.GraphDatabase.driver(neo4j_server["uri"],
                                    auth=(neo4j_server["user"], neo4j_server["password"])) as driver:
        first, _, _ = driver.execute_query(
            "MATCH (p:Passage) WITH p ORDER BY p.seq LIMIT 10 SET p.words = p.words + ' ' RETURN p.id AS id")
    store = Neo4jStore(neo4j_server["uri"], neo4j_server["user"], neo4j_server["password"])
    try:
        terms = ["orvell", "brine", "casks"]
        query = " OR ".join(f'"{t}"' for t in terms)
        everything, filtered = Neo4jReader(store.db, None), Neo4jReader(store.db, None)
        early = everything.keyword_candidates(query, terms, 5, everything=True)
        whole = filtered.keyword_candidates(query, terms, 5)
        assert early == whole
        assert [pid for pid, _, _ in early] == [r["id"] for r in first[:5]]
        assert everything.calls["read_keyword_candidates"] > 1, "asked again, wider, past the tie"
        assert filtered.calls["read_keyword_candidates"] == 1
    finally:
        store.close()


def test_a_forgotten_passage_moves_no_keyword_statistic_for_a_reader_of_every_space(
        neo4j_server: dict[str, str], neo4j_wipe: Callable[[], None], embedder: Any):
    """With a passage forgotten, a reader of every space no longer sees the whole index: its words'
    document frequencies are counted over the live passages, as in process (same scores)."""
    neo4j_wipe()
    texts = ["Orvell tallies the brine casks.", "Orvell mends the brine nets.", "Brine casks leak at Orvell.",
             "The harbour of Brask keeps its casks dry.", "Nets and casks are stacked at Brask."]
    with Memory(Neo4jStore(neo4j_server["uri"], neo4j_server["user"], neo4j_server["password"]),
                embedder=embedder) as local, \
            Memory(Neo4jStore(neo4j_server["uri"], neo4j_server["user"], neo4j_server["password"]),
                   settings=Settings(neo4j_read="store"), embedder=embedder) as remote:
        uids = [local.remember(text).uid for text in texts]
        local.forget(uids[0])
        local.forget(uids[2])
        for query in ["Orvell brine casks", "casks at Brask", "nets"]:
            with local.reading() as state:
                mine = _keyword_scores(LocalSource(state, local.store, None), query)
            theirs = _keyword_scores(remote.store_reads.source(None), query)
            assert mine and theirs == pytest.approx(mine, rel=1e-6), query


def _keyword_scores(source: Any, query: str, k: int = 10) -> dict[str, float]:
    found = source.keyword_scores(query, k)
    return dict(zip(source.record_ids(list(found)), found.values(), strict=True))
