"""Personalized PageRank through Neo4j's Graph Data Science library (``hippo.store.neo4j.gds``),
against a real server that has it (``NEO4J_GDS=1 scripts/neo4j start``; ``scripts/test`` starts
its server so): the projection holds what the spaces asked for and nothing else, and a GDS walk
ranks passages as hippo's own push does from the same reset."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from hippo import Memory, Settings
from hippo.errors import StoreError
from hippo.graph.ppr import push_pagerank
from hippo.store.neo4j import Neo4jStore, gds
from tests.conftest import unavailable

pytestmark = pytest.mark.neo4j

SMALL_SPACE = "user:zed"
GRAPH = "hippo-test"


@pytest.fixture(scope="module")
def memory(request: pytest.FixtureRequest, embedder: Any, sample_corpus: list[dict]) -> Iterator[Memory]:
    """The sample corpus in ``org`` and three passages in a small space, read store-side."""
    found = request.getfixturevalue("neo4j_server")
    request.getfixturevalue("neo4j_wipe")()
    store = Neo4jStore(found["uri"], found["user"], found["password"])
    if gds.version(store.db) is None:
        store.close()
        unavailable("this Neo4j has no Graph Data Science library (start it with NEO4J_GDS=1 scripts/neo4j start)")
    with Memory(store, settings=Settings(neo4j_read="store"), embedder=embedder) as memory:
        memory.index(sample_corpus)
        memory.index([{"title": "Zed's notes", "text": f"Zed keeps note {i} about the harbour lighthouse of Brask."}
                      for i in range(3)], space=SMALL_SPACE)
        yield memory
        gds.drop(store.db, GRAPH)


def _counts(memory: Memory, spaces: list[str] | None) -> tuple[int, int]:
    with memory.store.db.session() as session:  # type: ignore[attr-defined]
        row = session.run("MATCH (p:Passage) WHERE p.forgotten_at IS NULL AND ($s IS NULL OR p.space IN $s) "
                          "WITH collect(p) AS ps UNWIND ps AS p OPTIONAL MATCH (p)-[:MENTIONS]->(e:Entity) "
                          "RETURN size(ps) AS passages, count(DISTINCT e) AS entities", s=spaces).single()
    return row["passages"], row["entities"]


def _passages(memory: Memory, space: str) -> list[Any]:
    documents = memory.store.find_documents(spaces=(space,))
    return memory.store.document_passages([d.id for d in documents])


def test_a_projection_holds_the_passages_of_its_spaces_and_the_entities_they_mention(memory: Memory):
    db = memory.store.db  # type: ignore[attr-defined]
    everything = gds.project(db, GRAPH)
    passages, entities = _counts(memory, None)
    assert everything.nodes == passages + entities
    assert everything.relationships > 2 * passages  # every passage mentions something, both directions
    small = gds.project(db, GRAPH, spaces=[SMALL_SPACE])  # replaces the graph of that name
    assert small.nodes == sum(_counts(memory, [SMALL_SPACE])) < everything.nodes


def test_a_gds_walk_ranks_passages_as_the_local_push_does(memory: Memory):
    db = memory.store.db  # type: ignore[attr-defined]
    gds.project(db, GRAPH, spaces=["org"], relation_weight=memory.settings.relation_weight,
                mention_weight=memory.settings.mention_weight)
    source = memory.store_reads.source(("org",))
    first = _passages(memory, "org")[0].id
    seeds = source.mentions(source.nodes([first])[first])[:3]
    assert len(seeds) >= 2
    ids = source.record_ids(seeds.tolist())
    pushed = push_pagerank(source, seeds, np.ones(len(seeds)), memory.settings.damping, 1e-9)
    passage = np.array([bool(source.table.passage[h]) for h in pushed.vertices.tolist()])
    order = np.argsort(-pushed.scores[passage], kind="stable")[:5]
    by_push = source.record_ids(pushed.vertices[passage][order].tolist())
    by_gds = [pid for pid, _ in gds.pagerank(db, GRAPH, ids, damping=memory.settings.damping, top=5)]
    assert by_gds[0] == by_push[0]
    assert len(set(by_gds) & set(by_push)) >= 4


def test_a_walk_on_a_small_space_projection_never_reaches_another_space(memory: Memory):
    db = memory.store.db  # type: ignore[attr-defined]
    gds.project(db, GRAPH, spaces=[SMALL_SPACE])
    zed = _passages(memory, SMALL_SPACE)
    source = memory.store_reads.source((SMALL_SPACE,))
    seeds = source.mentions(source.nodes([zed[0].id])[zed[0].id])
    found = gds.pagerank(db, GRAPH, source.record_ids(seeds.tolist()), damping=0.5, top=50)
    assert found and {pid for pid, _ in found} <= {p.id for p in zed}


def test_a_missing_projection_is_a_store_error_naming_it(memory: Memory):
    db = memory.store.db  # type: ignore[attr-defined]
    gds.drop(db, GRAPH)
    with pytest.raises(StoreError, match=GRAPH):
        gds.pagerank(db, GRAPH, ["anything"], damping=0.5, top=5)
