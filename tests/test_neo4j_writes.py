"""Writes in store-side read mode (``HIPPO_NEO4J_READ=store``) against a real Neo4j: they plan on the
store itself (``hippo.memory.write_view.StoreView``), build no derived state, and store and answer
exactly what the same writes store and answer in process."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from typing import Any

import neo4j
import numpy as np
import pytest

from hippo import Memory, Settings
from hippo.store.neo4j import Neo4jStore

pytestmark = pytest.mark.neo4j

ANN = "user:ann"
NOTES = ["Quorvath the ferryman guards the Brask tide gate for Greta Lind.",
         "Quorvath, the ferryman, guards the tide gate of Brask for Greta Lind.",
         "Greta Lind painted the Ossery Strait tides; Edvard Lind framed them."]


def _open(server: dict[str, str], embedder: Any, mode: str) -> Memory:
    return Memory(Neo4jStore(server["uri"], server["user"], server["password"]),
                  settings=Settings(neo4j_read=mode), embedder=embedder)


def _story(memory: Memory, corpus: list[dict]) -> dict[str, Any]:
    """Index, remember (a near duplicate among them), the user-context block, forget with and without
    a dry run, restore: every answer, and the graph the writes left."""
    said: dict[str, Any] = {"index": memory.index(corpus[:12]).model_dump(exclude={"timings", "usage"})}
    indexed = memory.index(corpus[12:24])  # its entities link to stored ones through the view
    said["index_more"] = indexed.model_dump(exclude={"timings", "usage"})
    said["remember"] = [memory.remember(text, space=ANN).model_dump() for text in NOTES]
    said["again"] = memory.remember(NOTES[0], space=ANN).model_dump()  # unchanged: its near duplicates again
    said["context"] = memory.context("ann")  # the people of ann's space, named as her notes spell them
    doc = indexed.ids[4]
    said["dry_run"] = memory.forget(doc, dry_run=True).model_dump()
    said["forget"] = memory.forget(doc).model_dump()
    said["forget_memory"] = memory.forget(said["remember"][2]["uid"], spaces=[ANN]).model_dump()
    said["restore"] = memory.restore(doc).model_dump()
    said["graph_stats"] = memory.graph_stats()  # in process: the projection the writes kept up to date
    graph = memory.store.load_graph()
    said["graph"] = {"passages": sorted(graph.passages), "entities": sorted(graph.entities),
                     "facts": sorted(graph.facts), "mentions": sorted(graph.mentions),
                     "synonyms": {(a, b): s for a, b, s in graph.synonyms}}
    return said


def _same(got: Any, want: Any, where: str = "") -> None:
    """Equal, with floats (synonym scores, similarities) equal to 1e-6."""
    if isinstance(want, dict):
        assert got.keys() == want.keys(), f"{where}: {sorted(got.keys() ^ want.keys())[:4]}"
        for key in want:
            _same(got[key], want[key], f"{where}/{key}")
    elif isinstance(want, list) and not isinstance(want, str):
        assert len(got) == len(want), f"{where}: {len(got)} != {len(want)}"
        for i, (a, b) in enumerate(zip(got, want, strict=True)):
            _same(a, b, f"{where}[{i}]")
    elif isinstance(want, float):
        assert math.isclose(got, want, abs_tol=1e-6), f"{where}: {got} != {want}"
    else:
        assert got == want, f"{where}: {got!r} != {want!r}"


def test_store_side_writes_store_and_answer_what_in_process_writes_do(
        neo4j_server: dict[str, str], neo4j_wipe: Callable[[], None], embedder: Any, sample_corpus: list[dict]):
    neo4j_wipe()
    with _open(neo4j_server, embedder, "memory") as memory:
        want = _story(memory, sample_corpus)
    assert want["graph"]["synonyms"] and want["remember"][1]["near_duplicates"], "the story exercises both"
    assert "Greta Lind" in want["context"]
    forget = want["forget"]
    assert forget["entities"] and forget["edges"]["synonym"] and len(forget["entities"]) < forget["edges"]["mention"]
    neo4j_wipe()
    with _open(neo4j_server, embedder, "store") as memory:
        got = _story(memory, sample_corpus)
        assert not memory.engine.loaded, "no write built the derived state"
        assert memory.recall(NOTES[0], spaces=[ANN]).hits and not memory.engine.loaded
    _same(got, want)


class _Stalling:
    """The test embedder, failing every call that encodes ``text`` until ``released``: a remember whose
    embedding timed out, whose records the background embedding picks up."""

    def __init__(self, inner: Any, text: str) -> None:
        self.inner, self.text = inner, text
        self.failed, self.released = threading.Event(), threading.Event()
        self.name, self.dim, self.backend = inner.name, inner.dim, getattr(inner, "backend", "torch")

    def encode(self, texts: list[str]) -> np.ndarray:
        if self.text in texts and not self.released.is_set():
            self.failed.set()
            raise TimeoutError("stalled")
        return self.inner.encode(texts)


def test_a_store_side_remember_that_could_not_embed_is_embedded_in_the_background(
        neo4j_server: dict[str, str], neo4j_wipe: Callable[[], None], embedder: Any, sample_corpus: list[dict]):
    neo4j_wipe()
    with _open(neo4j_server, embedder, "memory") as memory:
        memory.index(sample_corpus[:8])
    text = "Quorvath the ferryman keeps the Brask tide ledger."
    stalling = _Stalling(embedder, text)
    with Memory(Neo4jStore(neo4j_server["uri"], neo4j_server["user"], neo4j_server["password"]),
                settings=Settings(neo4j_read="store"), embedder=stalling) as memory:
        result = memory.remember(text, space=ANN)
        assert stalling.failed.is_set() and not result.embedded
        marked = _waiting(neo4j_server)
        assert {kind for kind, _ in marked} == {"passage", "entity", "fact"}
        assert memory.engine.view().unembedded == marked
        stalling.released.set()
        assert memory.engine.wait_embedded(timeout=60), "the background embedding finished"
        assert not memory.engine.view().unembedded and not _waiting(neo4j_server), "the marks went with the wait"
        assert memory.recall("Who keeps the Brask tide ledger?", spaces=[ANN]).hits[0].doc_id == result.uid
        assert not memory.engine.loaded


def _waiting(server: dict[str, str]) -> set[tuple[str, str]]:
    """The records marked as waiting for a vector."""
    with neo4j.GraphDatabase.driver(server["uri"], auth=(server["user"], server["password"])) as driver:
        rows, _, _ = driver.execute_query(
            "MATCH (n) WHERE (n:Passage OR n:Entity) AND n.waiting RETURN toLower(labels(n)[0]) AS kind, n.id AS id "
            "UNION ALL MATCH ()-[r:RELATES]->() WHERE r.waiting RETURN 'fact' AS kind, r.id AS id")
    return {(r["kind"], r["id"]) for r in rows}


def test_a_store_of_schema_5_marks_what_waits_for_a_vector_and_embeds_it_on_open(
        neo4j_server: dict[str, str], neo4j_wipe: Callable[[], None], embedder: Any, sample_corpus: list[dict]):
    """Records an older hippo left without vectors are marked by the migration, and a store-side
    process embeds them once it opens, with no write to wake it."""
    neo4j_wipe()
    with _open(neo4j_server, embedder, "store") as memory:
        memory.index(sample_corpus[:4])
    with neo4j.GraphDatabase.driver(neo4j_server["uri"],
                                    auth=(neo4j_server["user"], neo4j_server["password"])) as driver:
        rows, _, _ = driver.execute_query(
            "MATCH (p:Passage) WITH p ORDER BY p.seq LIMIT 1 MATCH (v:Vector {hash: p.embed_hash}) DETACH DELETE v "
            "RETURN p.id AS id, p.text AS text")
        driver.execute_query("MATCH (m:Meta) SET m.schema_version = '5'")
    [passage] = rows
    assert not _waiting(neo4j_server)
    with _open(neo4j_server, embedder, "store") as memory:
        assert _waiting(neo4j_server) == {("passage", passage["id"])}
        assert memory.engine.view().unembedded == {("passage", passage["id"])}
        deadline = time.monotonic() + 60  # opening woke the background embedding: nothing else asks it
        while _waiting(neo4j_server) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _waiting(neo4j_server)
        assert memory.retrieve(passage["text"], mode="dense", k=1)[0].id == passage["id"]
