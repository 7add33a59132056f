"""``hippo.push``, store-side recall's walk inside Neo4j (``hippo.store.neo4j.push``, the procedure in
``scripts/neo4j-plugin``, installed by ``scripts/neo4j start``), against the frontier waves and the
exact power iteration on the same database: the same scores within the push's bound, nothing a
reader may not see, bad input refused by name."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import neo4j
import numpy as np
import pytest

from hippo import Memory, Settings
from hippo.datasets import SAMPLE
from hippo.errors import StoreError
from hippo.store.neo4j import Neo4jStore

pytestmark = pytest.mark.neo4j

QUESTIONS = [q["question"] for q in json.loads((SAMPLE / "questions.json").read_text(encoding="utf-8"))]
SPACE = "user:zed"
EPSILON = 1e-7
READERS: list[frozenset[str] | None] = [None, frozenset({"org"}), frozenset({SPACE}), frozenset({"org", SPACE})]


@pytest.fixture(scope="module")
def server(request: pytest.FixtureRequest, embedder: Any, sample_corpus: list[dict]) -> Iterator[dict[str, str]]:
    """The sample corpus in ``org``; in a small space three notes naming its people, one forgotten."""
    found = request.getfixturevalue("neo4j_server")
    request.getfixturevalue("neo4j_wipe")()
    with _memory(found, embedder) as memory:
        memory.index(sample_corpus)
        notes = [memory.remember(f"Zed Marlow met {name} at the Brask lighthouse in 1901.", space=SPACE)
                 for name in ("Tobiah Südhof", "the harbour master", "Lanthorn Isle's keeper")]
        memory.forget(notes[0].uid, space=SPACE)
    yield found


def _memory(server: dict[str, str], embedder: Any, **settings: Any) -> Memory:
    return Memory(Neo4jStore(server["uri"], server["user"], server["password"]),
                  settings=Settings(neo4j_read="store", **settings), embedder=embedder)


def _cypher(server: dict[str, str], query: str, **params: Any) -> list[dict[str, Any]]:
    with neo4j.GraphDatabase.driver(server["uri"], auth=(server["user"], server["password"])) as driver:
        records, _, _ = driver.execute_query(query, params)
        return [r.data() for r in records]


def _walk(memory: Memory, spaces: frozenset[str] | None, seeds: dict[str, float], solver: str) -> dict[str, float]:
    """PPR by record id from these seeds (those the reader sees), as ``solver`` finds it."""
    source = memory.store_reads.source(spaces)
    handles = source.nodes(list(seeds))
    if not handles:
        return {}
    scores = source.pagerank(np.array(list(handles.values())), np.array([seeds[r] for r in handles]), 0.5,
                             solver=solver, epsilon=EPSILON, exact_max_edges=0)  # type: ignore[arg-type]
    return dict(zip(source.record_ids(scores.vertices.tolist()), scores.scores.tolist(), strict=True))


def _seed_sets(server: dict[str, str]) -> list[dict[str, float]]:
    rng = np.random.default_rng(5)
    entities = [r["id"] for r in _cypher(server, "MATCH (e:Entity) RETURN e.id AS id ORDER BY id")]
    passages = [r["id"] for r in _cypher(server, "MATCH (p:Passage) RETURN p.id AS id ORDER BY id")]
    sets = []
    for _ in range(6):
        chosen = [*rng.choice(entities, 4, replace=False), *rng.choice(passages, 2, replace=False)]
        sets.append({rid: float(w) for rid, w in zip(chosen, rng.uniform(0.1, 1.0, len(chosen)), strict=True)})
    return sets


def test_the_server_walks_what_the_waves_and_the_exact_iteration_walk(server: dict[str, str], embedder: Any):
    """For every reader, from mixed seeds: the same nodes with mass as the frontier waves, and each
    score within the push's bound of the exact power iteration over the reader's view."""
    inside, waves = _memory(server, embedder, neo4j_read_push="server"), _memory(server, embedder,
                                                                                 neo4j_read_push="waves")
    try:
        for spaces in READERS:
            for seeds in _seed_sets(server):
                pushed = _walk(inside, spaces, seeds, "push")
                waved = _walk(waves, spaces, seeds, "push")
                exact = _walk(waves, spaces, seeds, "exact")
                if not exact:
                    assert not pushed
                    continue
                assert set(pushed) <= set(exact), spaces
                top = sorted(exact, key=exact.__getitem__, reverse=True)[:10]
                for rid in top:  # the strongest nodes carry masses far above the bound
                    assert pushed[rid] == pytest.approx(exact[rid], abs=1e-4), (spaces, rid)
                    assert pushed[rid] == pytest.approx(waved[rid], abs=1e-4), (spaces, rid)
                assert sum(pushed.values()) == pytest.approx(sum(exact.values()), abs=1e-3)
                assert inside.store_reads.statements()["read_push"][0] > 0
    finally:
        inside.close()
        waves.close()


def test_a_server_walk_reaches_nothing_its_reader_may_not_see(server: dict[str, str], embedder: Any):
    """Every passage a walk gives back is live and in the reader's spaces, every entity is mentioned
    by such a passage: a hidden space or a forgotten note moves no mass and shows no id."""
    memory = _memory(server, embedder, neo4j_read_push="server")
    try:
        for spaces in READERS:
            readable = sorted(spaces) if spaces is not None else None
            for seeds in _seed_sets(server):
                walked = _walk(memory, spaces, seeds, "push")
                ids = list(walked)
                rows = _cypher(server, """
                    UNWIND $ids AS rid MATCH (n {id: rid})
                    RETURN rid, n:Passage AS passage, n.space AS space, n.forgotten_at IS NULL AS live,
                           EXISTS { MATCH (p:Passage)-[:MENTIONS]->(n) WHERE p.forgotten_at IS NULL
                                    AND ($spaces IS NULL OR p.space IN $spaces) } AS mentioned""",
                               ids=ids, spaces=readable)
                assert len(rows) == len(ids)
                for r in rows:
                    if r["passage"]:
                        assert r["live"] and (readable is None or r["space"] in readable), (spaces, r)
                    else:
                        assert r["mentioned"], (spaces, r)
    finally:
        memory.close()


def test_recall_with_the_walk_in_the_server_finds_what_the_waves_find(server: dict[str, str], embedder: Any):
    """End to end: the same hits as frontier waves, each walk in one round trip (the local push asked
    for: the sample's graph is small enough for the exact iteration)."""
    inside = _memory(server, embedder, neo4j_read_push="server", ppr_solver="push")
    waves = _memory(server, embedder, neo4j_read_push="waves", ppr_solver="push")
    try:
        overlaps = []
        for q in QUESTIONS:
            a, b = [h.id for h in inside.recall(q, k=10).hits], [h.id for h in waves.recall(q, k=10).hits]
            overlaps.append(len(set(a) & set(b)) / max(len(b), 1))
        assert np.mean(overlaps) >= 0.95, np.mean(overlaps)
        calls = {name: n for name, (n, _) in inside.store_reads.statements().items()}
        assert calls.get("read_push", 0) >= len(QUESTIONS), calls
    finally:
        inside.close()
        waves.close()


def test_bad_walk_input_is_refused_by_name(server: dict[str, str], embedder: Any):
    memory = _memory(server, embedder, neo4j_read_push="server")
    try:
        reader = memory.store.reader(None, push="server")
        [entity] = [r["id"] for r in _cypher(server, "MATCH (e:Entity) RETURN e.id AS id LIMIT 1")]
        with pytest.raises(StoreError, match="damping"):
            reader.push([(entity, False, 1.0)], 1.5, EPSILON)
        with pytest.raises(StoreError, match="weight"):
            reader.push([(entity, False, -1.0)], 0.5, EPSILON)
        with pytest.raises(StoreError, match="epsilon"):
            reader.push([(entity, False, 1.0)], 0.5, 0.0)
        assert reader.push([(entity, False, 1.0)], 0.5, EPSILON).scores.sum() > 0  # the session still serves
    finally:
        memory.close()


def test_asking_for_the_server_walk_where_it_is_missing_names_the_fix(server: dict[str, str]):
    store = Neo4jStore(server["uri"], server["user"], server["password"])
    try:
        assert not store.reader(None).server_push  # frontier waves unless asked
        assert store.reader(None, push="server").server_push  # scripts/neo4j start installed it
        store._push = False
        store.db.read = _without_push(store.db.read)  # as a server without the plugin answers
        with pytest.raises(StoreError, match="scripts/neo4j start"):
            store.reader(None, push="server")
    finally:
        store.close()


def _without_push(read: Any) -> Any:
    def answer(name: str, doing: str, **params: Any) -> list[Any]:
        return [] if name == "push_installed" else read(name, doing, **params)
    return answer
