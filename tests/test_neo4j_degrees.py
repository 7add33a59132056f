"""What a Neo4j store keeps for store-side reads (schemas 4 and 5): degree counters on every passage
and entity, on each fact its passage's space and forgotten_at, and on each space its live passages and
their words. Every write (forget and restore too) keeps them equal to a recount, the counters give
the in-process projection's strengths, an older store gets them on open, and with them a store-side
push leaves unread the nodes it would not push."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import neo4j
import numpy as np
import pytest

from hippo import Memory, Settings
from hippo.errors import StoreError
from hippo.store.neo4j import Neo4jStore
from hippo.store.neo4j.schema import SCHEMA_VERSION

pytestmark = pytest.mark.neo4j

SPACE = "user:zed"
RECOUNT = """
MATCH (n) WHERE n:Passage OR n:Entity
RETURN n.id AS id, n:Passage AS passage, n.mention_count AS mentions, n.fact_count AS facts,
       n.synonym_weight AS synonyms, COUNT { (n)-[:MENTIONS]-() } AS real_mentions,
       COUNT { (n)-[:RELATES]->() } + COUNT { (n)<-[:RELATES]-() } AS real_facts,
       reduce(total = 0.0, s IN [(n)-[s:SYNONYM]-() | s.score] | total + s) AS real_synonyms
"""

FACTS = """
MATCH ()-[r:RELATES]->() MATCH (p:Passage {id: r.passage_id})
RETURN r.id AS id, r.space AS space, r.forgotten_at AS forgotten_at, p.space AS passage_space,
       p.forgotten_at AS passage_forgotten_at
"""

SPACES = """
MATCH (p:Passage)
WITH p.space AS name, sum(CASE WHEN p.forgotten_at IS NULL THEN 1 ELSE 0 END) AS real_passages,
     sum(CASE WHEN p.forgotten_at IS NULL THEN p.word_count ELSE 0 END) AS real_words
OPTIONAL MATCH (s:Space {name: name})
RETURN name, s.live_passages AS passages, s.live_words AS words, real_passages, real_words,
       COUNT { (:Space) } AS space_nodes
"""


@pytest.fixture(scope="module")
def server(request: pytest.FixtureRequest, embedder: Any, sample_corpus: list[dict]) -> Iterator[dict[str, str]]:
    """The sample corpus in ``org``, three notes in a small space, one forgotten."""
    found = request.getfixturevalue("neo4j_server")
    request.getfixturevalue("neo4j_wipe")()
    with _memory(found, embedder) as memory:
        memory.index(sample_corpus)
        memory.index(sample_corpus[:5])  # again: nothing new, nothing counted twice
        notes = [memory.remember(f"Zed Marlow founded the Brask Lighthouse Company {i} in Oslo in 1901.",
                                 space=SPACE)
                 for i in range(3)]
        memory.forget(notes[1].uid, space=SPACE)
        memory.restore(notes[1].uid, spaces=[SPACE])  # its facts come back with it
        memory.forget(notes[0].uid, space=SPACE)  # a forgotten passage's edges still count, as in process
    yield {**found, "forgotten": notes[0].uid}


def _memory(server: dict[str, str], embedder: Any, **settings: Any) -> Memory:
    return Memory(Neo4jStore(server["uri"], server["user"], server["password"], **settings.pop("store", {})),
                  settings=Settings(**settings), embedder=embedder)


def _session(server: dict[str, str]) -> Any:
    driver = neo4j.GraphDatabase.driver(server["uri"], auth=(server["user"], server["password"]))
    return driver, driver.session()


def _counters(server: dict[str, str], query: str = RECOUNT) -> list[dict[str, Any]]:
    driver, session = _session(server)
    with driver, session:
        return [dict(r) for r in session.run(query)]


def assert_facts_follow_their_passages(rows: list[dict[str, Any]]) -> None:
    """Every row of ``FACTS``: the fact's space and forgotten_at are its passage's."""
    assert rows
    for r in rows:
        assert (r["space"], r["forgotten_at"]) == (r["passage_space"], r["passage_forgotten_at"]), r


def assert_counted(rows: list[dict[str, Any]]) -> None:
    """Every row of ``RECOUNT`` has the counters it recounts."""
    assert rows
    for r in rows:
        assert r["mentions"] == r["real_mentions"], r
        if r["passage"]:
            assert r["facts"] is None and r["synonyms"] is None, r
        else:
            assert r["facts"] == r["real_facts"], r
            assert r["synonyms"] == pytest.approx(r["real_synonyms"], abs=1e-9), r


def assert_spaces_counted(rows: list[dict[str, Any]]) -> None:
    """Every row of ``SPACES``: the space's node counts its live passages and their words, and there is
    one node per space a passage was written to."""
    assert rows and all(r["space_nodes"] == len(rows) for r in rows)
    for r in rows:
        assert (r["passages"], r["words"]) == (r["real_passages"], r["real_words"]), r


def _rounded(row: dict[str, Any]) -> tuple[Any, ...]:
    return row["mentions"], row["facts"], None if row["synonyms"] is None else round(row["synonyms"], 9)


def test_every_write_keeps_each_nodes_counters_equal_to_a_recount(server: dict[str, str]):
    rows = _counters(server)
    assert any(r["real_synonyms"] > 0 for r in rows) and any(r["real_facts"] > 0 for r in rows)
    assert_counted(rows)
    facts = _counters(server, FACTS)
    assert any(r["forgotten_at"] for r in facts) and any(r["space"] == SPACE and not r["forgotten_at"] for r in facts)
    assert_facts_follow_their_passages(facts)
    spaces = {r["name"]: r for r in _counters(server, SPACES)}
    assert spaces[SPACE]["passages"] == 2 and spaces["org"]["passages"] > 50  # three notes, one forgotten
    assert_spaces_counted(list(spaces.values()))
    # a synonym whose score changes moves both ends' synonym_weight by the difference
    driver, session = _session(server)
    with driver, session:
        pair = session.run("MATCH (a:Entity)-[s:SYNONYM]->(b:Entity) RETURN a.id AS a, b.id AS b, s.score AS score "
                           "LIMIT 1").single()
    store = Neo4jStore(server["uri"], server["user"], server["password"])
    try:
        halved = {"a": pair["a"], "b": pair["b"], "score": pair["score"] / 2}
        store.db.write_one("write_synonyms", "a test", rows=[halved])
    finally:
        store.close()
    assert_counted(_counters(server))


def test_the_counters_give_the_in_process_strength_of_every_node(server: dict[str, str], embedder: Any):
    """What store-side push schedules with (for a reader of every space when nothing is forgotten),
    read with the edges: the in-process projection's strength (over every edge, forgotten passages
    too), with the weights set."""
    weights = {"mention_weight": 0.5, "relation_weight": 2.0}
    local = _memory(server, embedder, **weights)
    remote = _memory(server, embedder, neo4j_read="store", **weights)
    try:
        with local.reading() as state:
            p = state.projection
            expected = {rid: float(p.strength.values[v]) for rid, v in p.vertex.items()}
        source = remote.store_reads.source(None)
        seeds = source.nodes(list(expected))  # every node, so every node is some wave's target
        source.neighbours(np.array(sorted(seeds.values())))
        handles = np.array([seeds[rid] for rid in expected if rid in seeds])
        found = dict(zip(source.record_ids(handles.tolist()), source._total[handles].tolist(), strict=True))
        reached = [rid for rid in found if not np.isnan(source._total[seeds[rid]])]
        assert len(reached) > 0.9 * len(expected), (len(reached), len(expected))
        # a projection loaded from the store leaves out a forgotten passage's edges (and the synonyms
        # of what only it mentions), which the counters keep: a bound still, as the projection's
        # after a forget while it is open
        driver, session = _session(server)
        with driver, session:
            forgotten = {r["id"] for r in session.run(
                "MATCH (p:Passage) WHERE p.forgotten_at IS NOT NULL "
                "UNWIND [p.id] + [(p)-[:MENTIONS]->(e) | e.id] + [(p)-[:MENTIONS]->()-[:SYNONYM]-(o) | o.id] AS id "
                "RETURN id")}
        assert forgotten and all(found[rid] >= expected[rid] for rid in reached if rid in forgotten)
        same = [rid for rid in reached if rid not in forgotten]
        assert {rid: found[rid] for rid in same} == pytest.approx({rid: expected[rid] for rid in same})
    finally:
        local.close()
        remote.close()


def test_a_push_for_a_reader_of_every_space_reads_only_the_nodes_it_pushes(server: dict[str, str], embedder: Any):
    """With nothing forgotten, the same walk for a reader of every space (which schedules by the
    counters) and for a reader naming every space (which knows a node's strength only once it has
    read its edges): nearly the same scores, from fewer nodes read. With a passage forgotten both
    schedule by what they have read, so the two walks are one."""
    driver, session = _session(server)
    with driver, session:
        spaces = frozenset(r["s"] for r in session.run("MATCH (p:Passage) RETURN DISTINCT p.space AS s"))
        seeds = [r["id"] for r in session.run("MATCH (e:Entity) RETURN e.id AS id ORDER BY e.seq LIMIT 5")]

    def walk(reader: frozenset[str] | None) -> tuple[int, dict[str, float]]:
        with _memory(server, embedder, neo4j_read="store") as remote:  # a cold cache each time
            source = remote.store_reads.source(reader)
            handles = np.array(list(source.nodes(seeds).values()))
            scores = source.pagerank(handles, np.ones(len(handles)), 0.5, solver="push", epsilon=1e-4,
                                     exact_max_edges=0)
            top = np.argsort(-scores.scores)[:10]
            return len(source._edges), dict(zip(source.record_ids(scores.vertices[top].tolist()),
                                                scores.scores[top].tolist(), strict=True))

    assert walk(None) == walk(spaces)
    with _memory(server, embedder) as memory:
        memory.restore(server["forgotten"], spaces=[SPACE])
    try:
        (read_all, top_all), (read_named, top_named) = walk(None), walk(spaces)
        assert read_all < read_named, (read_all, read_named)
        assert len(set(top_all) & set(top_named)) >= 8, (top_all, top_named)
    finally:
        with _memory(server, embedder) as memory:
            memory.forget(server["forgotten"], space=SPACE)


def test_a_store_of_schema_3_gets_its_counters_on_open(server: dict[str, str], embedder: Any):
    before = {r["id"]: _rounded(r) for r in _counters(server)}
    spaces = _counters(server, SPACES)
    driver, session = _session(server)
    with driver, session:
        session.run("MATCH (n) WHERE n:Passage OR n:Entity REMOVE n.mention_count, n.fact_count, n.synonym_weight"
                    ).consume()
        session.run("MATCH ()-[r:RELATES]->() REMOVE r.space, r.forgotten_at").consume()
        session.run("MATCH (s:Space) DELETE s").consume()
        session.run("MATCH (m:Meta) SET m.schema_version = '3'").consume()
    with pytest.raises(StoreError, match=rf"schema version 3; this hippo reads version {SCHEMA_VERSION}"):
        Neo4jStore(server["uri"], server["user"], server["password"], create_schema=False)
    _memory(server, embedder).close()
    after = _counters(server)
    assert_counted(after)
    assert_facts_follow_their_passages(_counters(server, FACTS))
    assert {r["id"]: _rounded(r) for r in after} == before
    assert_spaces_counted(_counters(server, SPACES))
    assert _counters(server, SPACES) == spaces
    driver, session = _session(server)
    with driver, session:
        assert session.run("MATCH (m:Meta) RETURN m.schema_version AS v").single()["v"] == SCHEMA_VERSION
