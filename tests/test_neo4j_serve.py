"""A protocol server in store-side read mode (``HIPPO_NEO4J_READ=store``) over a real Neo4j and a real
socket: ``memory/build``, ``memory/recall`` and ``retrieve`` answer as an in-process server on the same
database does, and the store-side server never builds the derived state (no copy of the graph)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import neo4j as neo4j_driver
import pytest
import rcp

from hippo import Memory, Settings
from hippo.api.rcp import Service
from hippo.api.rcp.http import background
from hippo.datasets import SAMPLE
from hippo.store.neo4j import Neo4jStore
from hippo.text import approx_tokens

pytestmark = pytest.mark.neo4j

QUESTIONS = [q["question"] for q in json.loads((SAMPLE / "questions.json").read_text(encoding="utf-8"))][:6]
NEW_WORD = "Quorvandel"
WRITTEN = "What did Greta Südhof paint for Edvard Lind?"


@pytest.fixture(scope="module")
def neo4j(request: pytest.FixtureRequest, embedder: Any, sample_corpus: list[dict]) -> Iterator[dict[str, str]]:
    """The sample corpus, a session's passage another reader must not count, and a forgotten one."""
    found = request.getfixturevalue("neo4j_server")
    request.getfixturevalue("neo4j_wipe")()
    with Memory(Neo4jStore(found["uri"], found["user"], found["password"]), embedder=embedder) as memory:
        memory.index(sample_corpus)
        memory.index([{"title": "Scratch", "text": "Ilse Brandt painted the harbour of Visby in 1912."}],
                     space="session:other")
        note = memory.remember("Oskar Lind cast the Quay bell of Brask in 1899.")
        memory.forget(note.uid)  # its facts and entities are no one's to count
    yield found


@contextmanager
def _server(neo4j: dict[str, str], embedder: Any, read: str) -> Iterator[tuple[Service, rcp.Client]]:
    memory = Memory(Neo4jStore(neo4j["uri"], neo4j["user"], neo4j["password"]),
                    settings=Settings(neo4j_read=read), embedder=embedder)
    service = Service(memory)
    try:
        with background(service) as url:
            client = rcp.Client()
            client._transport = rcp.HttpTransport(url, timeout=300)
            client._handshake()
            yield service, client
    finally:
        service.close()


@pytest.fixture(scope="module")
def servers(neo4j: dict[str, str], embedder: Any) -> Iterator[dict[str, tuple[Service, rcp.Client]]]:
    with ExitStack() as stack:
        yield {read: stack.enter_context(_server(neo4j, embedder, read)) for read in ("store", "memory")}


def _ids(hits: list[dict]) -> list[str]:
    return [h["id"] for h in hits]


def _edges(graph: dict) -> set[tuple]:
    return {(e["src"], e["dst"], e["kind"], e["weight"]) for e in graph["edges"]}


def _recount(neo4j: dict[str, str]) -> tuple[int, int, int]:
    """(tokens, entities, facts) of the live index (no session's passages), read row by row and
    counted here, facts found through their passage ids (not the fields the writes keep)."""
    live = "MATCH (p:Passage) WHERE p.forgotten_at IS NULL AND NOT p.space STARTS WITH 'session:' "
    with neo4j_driver.GraphDatabase.driver(neo4j["uri"], auth=(neo4j["user"], neo4j["password"])) as driver:
        names = [r["name"] for r in driver.execute_query(
            live + "MATCH (p)-[:MENTIONS]->(e:Entity) RETURN DISTINCT e.id AS id, e.name AS name").records]
        lines = [f"{r['s']} {r['p']} {r['o']}" for r in driver.execute_query(
            live + "MATCH ()-[r:RELATES {passage_id: p.id}]->() RETURN r.subject AS s, r.predicate AS p, "
            "r.object AS o").records]
    return sum(map(approx_tokens, names)) + sum(map(approx_tokens, lines)), len(names), len(lines)


def test_a_store_side_build_sizes_the_memory_as_an_in_process_one_does(neo4j, servers):
    built = {read: client.memory_build(scope="global") for read, (_, client) in servers.items()}
    expected = _recount(neo4j)
    assert expected[0] > 1000
    for found in built.values():
        assert (found["tokens"], found["_meta"]["entities"], found["_meta"]["facts"]) == expected
    assert not servers["store"][0].memory.engine.loaded, "the store-side build copied no graph"


def test_store_side_recall_retrieve_and_graph_answer_as_in_process_ones_do(servers):
    built = {read: client.memory_build(scope="global")["memoryId"] for read, (_, client) in servers.items()}
    overlaps = []
    for question in QUESTIONS:
        recalled = {read: client.memory_recall(question, memory_id=built[read], n=4)
                    for read, (_, client) in servers.items()}
        store, memory = _ids(recalled["store"]["hits"]), _ids(recalled["memory"]["hits"])
        # Local push against the in-process default (exact PageRank on a graph this small): the same
        # first hit, and nearly the same ten (tests/test_neo4j_read.py holds the push-to-push parity).
        assert len(store) == len(memory) == 10 and store[0] == memory[0], question
        overlaps.append(len(set(store) & set(memory)) / 10)
        seeds = [s for c in recalled["memory"]["clues"] for s in c.get("seedIds", [])]
        assert seeds == [s for c in recalled["store"]["clues"] for s in c.get("seedIds", [])]
        if seeds:  # the graph method walks from them in Neo4j too
            local = {read: client.graph("local", {"seedIds": seeds, "k": 3}) for read, (_, client) in servers.items()}
            assert _ids(local["store"]["hits"])[:1] == _ids(local["memory"]["hits"])[:1]
            assert [h["provenance"]["nodes"] for h in local["store"]["hits"]][:1] == \
                [h["provenance"]["nodes"] for h in local["memory"]["hits"]][:1]
            around = {read: client.graph("neighbors", {"seedIds": seeds[:2], "k": 12})
                      for read, (_, client) in servers.items()}
            nodes = {read: {n["id"] for n in graph["nodes"]} for read, graph in around.items()}
            assert nodes["store"] == nodes["memory"] >= set(seeds[:2])
            assert _edges(around["store"]) == _edges(around["memory"])
        for mode in ("dense", "sparse", "hybrid"):
            found = {read: client.retrieve(question, k=5, opts={"mode": mode}) for read, (_, client) in servers.items()}
            assert len(found["store"]) == 5 and _ids(found["store"]) == _ids(found["memory"]), (question, mode)
            assert [h["score"] for h in found["store"]] == pytest.approx([h["score"] for h in found["memory"]],
                                                                         abs=1e-5)
    assert sum(overlaps) / len(overlaps) >= 0.9, overlaps
    assert not servers["store"][0].memory.engine.loaded, "store-side recall, retrieve and graph copied no graph"


def _known(memory: Memory) -> int:
    """Nodes whose edges the store-side reader of every space keeps cached."""
    cache = memory.store_reads._caches.get(None)
    return 0 if cache is None else int((cache.edges.runs.length.values >= 0).sum())


def _same_as_a_cold_reader(memory: Memory, neo4j: dict[str, str], embedder: Any) -> None:
    with Memory(Neo4jStore(neo4j["uri"], neo4j["user"], neo4j["password"]), settings=Settings(neo4j_read="store"),
                embedder=embedder) as cold:
        for question in [*QUESTIONS, WRITTEN]:
            warm_hits, cold_hits = memory.recall(question).hits, cold.recall(question).hits
            assert [h.id for h in warm_hits] == [h.id for h in cold_hits], question
            assert [h.score for h in warm_hits] == pytest.approx([h.score for h in cold_hits], abs=1e-12)


def test_after_a_write_a_reader_keeps_the_edges_it_did_not_change(neo4j, servers, embedder):
    """Every write lists the nodes it changed (a (:Change)); a store-side reader moving to the new
    revision drops those nodes' own cached edges only (re-reading their strengths where other edges
    reach them), and recalls exactly as a reader with nothing cached does."""
    (_, writer), (store_service, _) = servers["memory"], servers["store"]
    memory = store_service.memory
    for question in [*QUESTIONS, WRITTEN]:
        memory.recall(question)
    writer.index_add({"documents": [{"id": "tide-note", "text": "Greta Südhof painted the Ossery Strait tides "
                                                                 "for Edvard Lind in 1931."}]})
    for write in ("added", "forgotten"):
        before = _known(memory)
        memory.store_reads.source(None)  # the next recall's: it moves the cache to the new revision
        assert 0 < _known(memory) < before, write  # dropped what the write changed, kept the rest
        _same_as_a_cold_reader(memory, neo4j, embedder)
        if write == "added":
            writer.index_delete({"ids": ["tide-note"]})  # forgotten: its entities' edges change again
    assert not memory.engine.loaded


def test_a_write_through_one_server_is_what_the_store_side_one_reads_next(servers):
    (_, writer), (store_service, reader) = servers["memory"], servers["store"]
    before = reader.memory_build(scope="global")
    assert reader.retrieve(NEW_WORD, k=3, opts={"mode": "sparse"}) == []
    writer.index_add({"documents": [{"id": "new-note",
                                    "text": f"{NEW_WORD} Hall was designed by the architect Ilse Brandt."}]})
    after = reader.memory_build(scope="global")
    assert after["tokens"] > before["tokens"] and after["_meta"]["facts"] >= before["_meta"]["facts"]
    found = reader.retrieve(NEW_WORD, k=3, opts={"mode": "sparse"})
    assert found and NEW_WORD in found[0]["text"]
    assert not store_service.memory.engine.loaded
