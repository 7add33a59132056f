"""Store-side reads (``HIPPO_NEO4J_READ=store``) against a real Neo4j: the same answers as the
in-process source, no derived state built, other processes' writes seen at once, and a clear
``StoreError`` when Neo4j goes away mid-recall (the leak suite in this mode: test_neo4j_read_access.py)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import neo4j
import numpy as np
import pytest

from hippo import Memory, Settings
from hippo.datasets import SAMPLE
from hippo.errors import StoreError
from hippo.memory.source import LocalSource
from hippo.store.neo4j import Neo4jStore
from hippo.store.neo4j.frontier import Owners
from hippo.store.neo4j.reader import SPLIT_FROM, Neo4jReader
from hippo.store.neo4j.schema import SCHEMA_VERSION

pytestmark = pytest.mark.neo4j

QUESTIONS = [q["question"] for q in json.loads((SAMPLE / "questions.json").read_text(encoding="utf-8"))]
SMALL_SPACE = "user:zed"


@pytest.fixture(scope="module")
def server(request: pytest.FixtureRequest, embedder: Any, sample_corpus: list[dict]) -> Iterator[dict[str, str]]:
    """The sample corpus in ``org`` and three passages in a small space, indexed once."""
    found = request.getfixturevalue("neo4j_server")
    request.getfixturevalue("neo4j_wipe")()
    with Memory(Neo4jStore(found["uri"], found["user"], found["password"]), embedder=embedder) as memory:
        memory.index(sample_corpus)
        memory.index([{"title": "Zed's notes", "text": f"Zed keeps note {i} about the harbour lighthouse of Brask."}
                      for i in range(3)], space=SMALL_SPACE)
    yield found


def _memory(server: dict[str, str], embedder: Any, **settings: Any) -> Memory:
    return Memory(Neo4jStore(server["uri"], server["user"], server["password"], **settings.pop("store", {})),
                  settings=Settings(**settings), embedder=embedder)


def test_store_side_recall_finds_what_in_process_recall_finds(server: dict[str, str], embedder: Any):
    """Against the in-process source on the same database, with the same solver (local push):
    the same vector candidates and title seeds exactly, nearly the same hits."""
    local = _memory(server, embedder, ppr_solver="push")
    remote = _memory(server, embedder, neo4j_read="store")
    try:
        overlaps, first = [], 0
        for q in QUESTIONS:
            v = embedder.encode([q])[0]
            with local.reading() as state:
                mine, theirs = LocalSource(state, local.store, None), remote.store_reads.source(None)
                a, b = mine.nearest_passages(v, 20), theirs.nearest_passages(v, 20)
                assert mine.record_ids(a.handles.tolist()) == theirs.record_ids(b.handles.tolist()), q
                np.testing.assert_allclose(a.scores, b.scores, atol=1e-5)
                assert a.low == pytest.approx(b.low, abs=1e-5)
                titles = {mine.record_ids([h])[0]: w for h, w in mine.title_seeds(q).items()}
                assert titles == {theirs.record_ids([h])[0]: w for h, w in theirs.title_seeds(q).items()}, q
                assert _keyword_scores(mine, q) == pytest.approx(_keyword_scores(theirs, q), rel=1e-6), q
            x, y = [h.id for h in local.recall(q, k=10).hits], [h.id for h in remote.recall(q, k=10).hits]
            overlaps.append(len(set(x) & set(y)) / len(x))
            first += x[0] == y[0]
        assert np.mean(overlaps) >= 0.9 and first >= 0.8 * len(QUESTIONS), (np.mean(overlaps), first)
        assert not remote.engine.loaded, "store-side recall built no derived state"
    finally:
        local.close()
        remote.close()


def test_a_store_side_answer_does_not_depend_on_what_earlier_recalls_read(server: dict[str, str], embedder: Any):
    """The local push reads the nodes it has not read in this recall last; which ones the reader's
    edge cache holds from other questions changes what is read from Neo4j, never the answer."""
    warm = _memory(server, embedder, neo4j_read="store", ppr_solver="push")
    try:
        for q in QUESTIONS:
            warm.recall(q, k=10)
        for q in QUESTIONS[::-1]:
            cold = _memory(server, embedder, neo4j_read="store", ppr_solver="push")
            try:
                want = [(h.id, h.score) for h in cold.recall(q, k=10).hits]
            finally:
                cold.close()
            assert [(h.id, h.score) for h in warm.recall(q, k=10).hits] == want, q
    finally:
        warm.close()


def _keyword_scores(source: Any, query: str, k: int = 10) -> dict[str, float]:
    found = source.keyword_scores(query, k)
    return dict(zip(source.record_ids(list(found)), found.values(), strict=True))


def test_store_side_bm25_counts_the_words_in_process_bm25_counts(server: dict[str, str], embedder: Any):
    """The store keeps each passage's BM25 words for its full-text index, so stop words, possessives
    and accents score as in process: same passages, same scores (Lucene's own analyzer drops "the"
    and "or" and reads "Zed's" as one word)."""
    local, remote = _memory(server, embedder), _memory(server, embedder, neo4j_read="store")
    try:
        queries = ["Zed's notes on the harbour", "the or of", "Brask lighthouse AND NOT harbour", "Zéd",
                   *QUESTIONS[:5]]
        with local.reading() as state:
            mine, theirs = LocalSource(state, local.store, None), remote.store_reads.source(None)
            for q in queries:
                expected = _keyword_scores(mine, q)
                assert expected, q
                assert _keyword_scores(theirs, q) == pytest.approx(expected, rel=1e-6), q  # lengths: float32 in process
    finally:
        local.close()
        remote.close()


def test_a_store_of_schema_2_gets_its_words_on_open(server: dict[str, str], embedder: Any):
    """A store written before passages kept their words (schema 2) is given them on open, and its
    store-side keyword scores are those of a store written now."""

    q = "Zed's notes on the harbour"
    with _memory(server, embedder, neo4j_read="store") as memory:
        expected = _keyword_scores(memory.store_reads.source(None), q)
    with neo4j.GraphDatabase.driver(server["uri"], auth=(server["user"], server["password"])) as driver:
        with driver.session() as session:
            session.run("MATCH (p:Passage) REMOVE p.words, p.word_count").consume()
            session.run("MATCH (m:Meta) SET m.schema_version = '2'").consume()
    with pytest.raises(StoreError,
                       match=rf"schema version 2; this hippo reads version {SCHEMA_VERSION}; 'hippo neo4j indexes"):
        Neo4jStore(server["uri"], server["user"], server["password"], create_schema=False)
    with _memory(server, embedder, neo4j_read="store") as memory:
        assert _keyword_scores(memory.store_reads.source(None), q) == pytest.approx(expected, abs=1e-9)
    with neo4j.GraphDatabase.driver(server["uri"], auth=(server["user"], server["password"])) as driver:
        with driver.session() as session:
            assert session.run("MATCH (m:Meta) RETURN m.schema_version AS v").single()["v"] == SCHEMA_VERSION
            assert session.run("MATCH (p:Passage) WHERE p.words IS NULL RETURN count(p) AS n").single()["n"] == 0


def test_a_readers_keyword_statistics_are_read_once_a_revision(server: dict[str, str], embedder: Any):
    """BM25's document frequencies of a reader's words are kept with its cache for the store
    revision: asked again, the same words cost one read fewer and score the same."""
    remote = _memory(server, embedder, neo4j_read="store")
    try:
        q = QUESTIONS[0]
        scored, reads = [], []
        for _ in range(2):
            source = remote.store_reads.source(None)
            before = source.reader.round_trips
            found = source.keyword_scores(q, 5)
            reads.append(source.reader.round_trips - before)
            scored.append(dict(zip(source.record_ids(list(found)), found.values(), strict=True)))
        assert scored[0] and scored[0] == scored[1]
        assert reads[1] == reads[0] - 1, reads
    finally:
        remote.close()


def test_a_small_space_gets_its_true_top_k(server: dict[str, str], embedder: Any):
    """The vector index answers a global top k: a reader of three passages among the sample's still
    gets all three, by widening and by the exact scan past ``max_fetch``."""
    store = Neo4jStore(server["uri"], server["user"], server["password"])
    try:
        q = embedder.encode(["Which island did the treaty unite?"])[0]
        everything = store.reader(None).nearest("passages", q[None, :], [3])[0]
        assert not any(p.space == SMALL_SPACE for p in store.passages([r[0] for r in everything]))
        for max_fetch in (4096, 16):  # widening; the exact scan
            reader = store.reader(frozenset({SMALL_SPACE}), max_fetch=max_fetch)
            [found] = reader.nearest("passages", q[None, :], [3])
            assert [p.space for p in store.passages([r[0] for r in found])] == [SMALL_SPACE] * 3
            assert reader.round_trips >= 2, "the first fetch held no passage of the small space"
    finally:
        store.close()


def test_a_wide_frontier_read_in_parts_reads_the_same_edges(server: dict[str, str]):
    """A push wave over more than ``SPLIT_FROM`` nodes is read as several statements side by side
    (``neo4j_read_parts``), each on a core of the server: the same edges and strengths as one
    statement, for a reader of everything and for readers of one space."""
    store = Neo4jStore(server["uri"], server["user"], server["password"])
    try:
        graph = store.load_graph()
        ids = [pid for pid, _ in graph.passages]
        passages = Owners.of(range(len(ids)), ids, [-1] * len(ids))
        ids = sorted({e for _, e in graph.mentions})
        entities = Owners.of(range(len(passages), len(passages) + len(ids)), ids, [-1] * len(ids))
        parts = min(3, (len(passages) + len(entities)) // SPLIT_FROM + 1)
        assert parts >= 2, "the sample's frontier is wide enough to be split"
        for spaces in (None, frozenset({SMALL_SPACE}), frozenset({"org"})):
            whole = store.reader(spaces).neighbours(passages, entities).by_owner()
            split = store.reader(spaces, parts=3)
            assert split.neighbours(passages, entities).by_owner() == whole and whole
            assert split.calls["read_neighbours"] == parts
    finally:
        store.close()


def test_owners_found_by_node_id_read_the_edges_they_read_by_record_id(server: dict[str, str]):
    """A frontier read finds an owner the reader met before by its node id (no index seek) and a seed
    by its record id: the same edges either way, for every reader; a node id naming a node of the
    other kind reads nothing."""
    store = Neo4jStore(server["uri"], server["user"], server["password"])
    try:
        graph = store.load_graph()
        passages = [pid for pid, _ in graph.passages]
        entities = sorted({e for _, e in graph.mentions})
        with neo4j.GraphDatabase.driver(server["uri"], auth=(server["user"], server["password"])) as driver:
            records, _, _ = driver.execute_query("MATCH (n) WHERE n:Passage OR n:Entity "
                                                 "RETURN n.id AS id, id(n) AS node")
        node = {r["id"]: r["node"] for r in records}
        key = {rid: i for i, rid in enumerate(passages + entities)}

        def owners(ids: list[str], by_node: Callable[[int], bool]) -> Owners:
            return Owners.of([key[r] for r in ids], ids, [node[r] if by_node(i) else -1 for i, r in enumerate(ids)])

        for spaces in (None, frozenset({SMALL_SPACE}), frozenset({"org"})):
            reader = store.reader(spaces)
            by_id = reader.neighbours(owners(passages, lambda i: False), owners(entities, lambda i: False)).by_owner()
            by_node = reader.neighbours(owners(passages, lambda i: True), owners(entities, lambda i: True)).by_owner()
            mixed = reader.neighbours(owners(passages, lambda i: i % 2 == 1),
                                      owners(entities, lambda i: i % 2 == 0)).by_owner()
            assert by_node == by_id == mixed and by_id
            # a passage's targets are the entities it mentions, by node id
            for k, (_, targets, _) in by_id.items():
                if k < len(passages):
                    assert set(targets) == {node[e] for p, e in graph.mentions if p == passages[k]}
        crossed = store.reader(None).neighbours(Owners.of([0], [passages[0]], [node[entities[0]]]),
                                                Owners.of([1], [entities[0]], [node[passages[0]]]))
        assert crossed.by_owner() == {}
    finally:
        store.close()


def test_a_reader_of_everything_counts_mentions_by_the_entity_counters(server: dict[str, str]):
    """Where nothing is hidden from the reader, an entity's visible passages are its ``mention_count``
    (no passage's ``forgotten_at`` read, results/neo4j_profile-properties.md): the same counts and
    first passages as looking at each passage; a reader of one space looks whatever it is told."""
    store = Neo4jStore(server["uri"], server["user"], server["password"])
    try:
        graph = store.load_graph()
        mentions: dict[str, set[str]] = {}
        for pid, eid in graph.mentions:
            mentions.setdefault(eid, set()).add(pid)
        entities = sorted(mentions)
        everyone, zed = store.reader(None), store.reader(frozenset({SMALL_SPACE}))
        assert everyone.statistics().whole, "nothing of the module's store is forgotten yet"
        counted = everyone.entity_counts(entities, everything=True)
        assert counted == everyone.entity_counts(entities) == {e: len(p) for e, p in mentions.items()}
        assert everyone.first_passages(entities, everything=True) == everyone.first_passages(entities)
        assert zed.entity_counts(entities, everything=True) == zed.entity_counts(entities)
        assert 0 < sum(zed.entity_counts(entities).values()) < sum(counted.values())
        hub = max(entities, key=lambda e: len(mentions[e]))
        with neo4j.GraphDatabase.driver(server["uri"], auth=(server["user"], server["password"])) as driver:
            driver.execute_query("MATCH (e:Entity {id: $id}) SET e.mention_count = 999", id=hub)
            try:  # the counter is what is read, and only for a reader of everything
                assert everyone.entity_counts([hub], everything=True) == {hub: 999}
                assert everyone.entity_counts([hub]) == {hub: len(mentions[hub])}
            finally:
                driver.execute_query("MATCH (e:Entity {id: $id}) SET e.mention_count = $n", id=hub,
                                     n=len(mentions[hub]))
    finally:
        store.close()


def test_reads_run_on_a_session_per_thread_and_a_read_after_close_is_a_store_error(server: dict[str, str]):
    """Each thread reads on a READ session of its own (a session is not thread-safe); closing the
    store closes them all, and a read after that is a ``StoreError``, never a driver exception."""
    store = Neo4jStore(server["uri"], server["user"], server["password"])
    db = store.db
    answers: list[list[Any]] = []
    threads = [threading.Thread(target=lambda: answers.append(db.read("server_components", "asking")))
               for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(answers) == 3 and all(answer and answer[0]["name"] == "Neo4j Kernel" for answer in answers)
    assert db.read("server_components", "asking") == answers[0]
    assert len(db._sessions) == 4  # noqa: SLF001 - three threads' and this one's
    store.close()
    assert db._sessions == []  # noqa: SLF001
    with pytest.raises(StoreError, match="asking"):
        db.read("server_components", "asking")


def test_opening_in_store_mode_builds_no_derived_state(server: dict[str, str], embedder: Any):
    with _memory(server, embedder, neo4j_read="store") as memory:
        assert memory.store_reads is not None and not memory.engine.loaded
        result = memory.recall(QUESTIONS[0])
        assert result.hits and not memory.engine.loaded


def test_clue_expansion_reads_the_store(server: dict[str, str], embedder: Any):
    """MemoRAG clue expansion store-side: the facts around the seeds and the clues' passage searches
    come from Neo4j, and a clue-guided recall gives the clues (texts, kinds, grounding, passages) and
    hits the in-process one gives, for a reader of everything and of one small space, with no
    derived state built."""
    local = _memory(server, embedder, ppr_solver="push")
    remote = _memory(server, embedder, neo4j_read="store")
    try:
        around = same = 0
        for q in QUESTIONS:
            v = embedder.encode([q])[0]
            with local.reading() as state:
                mine, theirs = LocalSource(state, local.store, None), remote.store_reads.source(None)
                [(_, near)] = mine.nearest_entities(v[None], 3)
                entities = mine.record_ids(near.tolist())
                found = []
                for source in (mine, theirs):
                    handles = source.nodes(entities)
                    rows, scores = source.facts_around(v, np.array([handles[e] for e in entities]), 8, [])
                    found.append((source.fact_ids(rows.tolist()), scores))
                    [(_, passages)] = source.search_passages(v[None], 3)
                    found.append(source.record_ids(passages.tolist()))
                assert found[0][0] == found[2][0], q
                np.testing.assert_allclose(found[0][1], found[2][1], atol=1e-5)
                assert found[1] == found[3], q
                around += len(found[0][0])
            for spaces in (None, [SMALL_SPACE]):
                a, b = (m.recall(q, n=8, k=10, expand=True, spaces=spaces) for m in (local, remote))
                plain = [[h.id for h in m.recall(q, n=8, k=10, spaces=spaces).hits] for m in (local, remote)]
                if plain[0] != plain[1]:  # the walks may differ by a little (the first test): so may the rest
                    continue
                assert [c.model_dump(exclude={"weight"}) for c in a.clues] == \
                    [c.model_dump(exclude={"weight"}) for c in b.clues], (q, spaces)
                assert [c.weight for c in a.clues] == pytest.approx([c.weight for c in b.clues], abs=1e-5)
                assert [h.id for h in a.hits] == [h.id for h in b.hits], (q, spaces)
                same += 1
        assert around > len(QUESTIONS), "the questions' entities have facts around them"
        assert same >= len(QUESTIONS), same
        neighbours = [c for q in QUESTIONS for c in remote.recall(q, n=8, expand=True).clues if c.kind == "neighbour"]
        assert neighbours and all(c.passage_ids for c in neighbours)
        assert not remote.engine.loaded
    finally:
        local.close()
        remote.close()


WRITER = """
import sys
from hippo import Memory, Settings
with Memory.open(sys.argv[1], settings=Settings(neo4j_read="store")) as memory:
    print(memory.remember(sys.argv[2]).uid)
"""


def test_a_write_in_another_process_is_seen_by_the_next_recall(server: dict[str, str], embedder: Any):
    uri = server["uri"].replace("bolt://", f"bolt://{server['user']}:{server['password']}@")
    with _memory(server, embedder, neo4j_read="store") as memory:
        before = memory.recall("What does Quorvath the ferryman guard?", k=5)
        assert not any("quorvath" in h.text.casefold() for h in before.hits)
        subprocess.run([sys.executable, "-c", WRITER, uri, "Quorvath the ferryman guards the Brask tide gate."],
                       check=True, env={**os.environ, "HIPPO_NEO4J_READ": "store"}, timeout=300)
        after = memory.recall("What does Quorvath the ferryman guard?", k=5)
        assert "quorvath" in after.hits[0].text.casefold()


def test_a_reader_of_everything_keeps_the_edges_a_write_did_not_change(server: dict[str, str], embedder: Any):
    """With nothing forgotten, a reader of every space pushes by the nodes' counters, which travel with
    the edges that reach them: a write that adds mentions moves its entities' counters, so the cached
    edges that reach them are given the new strengths. After the write the warm reader recalls exactly as a cold one."""
    with _memory(server, embedder, neo4j_read="store") as warm, _memory(server, embedder) as writer:
        for q in QUESTIONS:
            warm.recall(q)
        writer.index([{"title": "Tide notes", "text": "Greta Südhof painted the Ossery Strait tides for Edvard "
                                                      "Lind, whose partner Tobiah Südhof built the tide-clock."}])
        assert warm.store_reads.source(None).statistics.passages == warm.store.counts()["passages"]  # none forgotten
        # every edge kept carries its target's strength as the store counts it now
        cache = warm.store_reads._caches[None]
        kept = np.flatnonzero(cache.edges.runs.length.values >= 0)
        _, targets, _, _, totals, _, _ = cache.edges.gather(kept)
        assert 0 < len(kept) and len(targets)
        s = Settings()
        with neo4j.GraphDatabase.driver(server["uri"], auth=(server["user"], server["password"])) as driver:
            now = {r["id"]: r["total"] for r in driver.execute_query(
                "MATCH (n) WHERE n.id IN $ids RETURN n.id AS id, $m * n.mention_count + "
                "$r * coalesce(n.fact_count, 0) + coalesce(n.synonym_weight, 0.0) AS total",
                ids=sorted({cache.names.ids[t] for t in targets.tolist()}), m=s.mention_weight,
                r=s.relation_weight).records}
        assert totals.tolist() == pytest.approx([now[cache.names.ids[t]] for t in targets.tolist()], abs=1e-9)
        with _memory(server, embedder, neo4j_read="store") as cold:
            for q in QUESTIONS:
                a, b = warm.recall(q), cold.recall(q)
                assert [h.id for h in a.hits] == [h.id for h in b.hits], q
                assert [h.score for h in a.hits] == pytest.approx([h.score for h in b.hits], abs=1e-12), q


class Proxy:
    """A TCP forwarder to Neo4j that can be cut: Neo4j going away, as the driver sees it."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.open: list[socket.socket] = []
        self.cut = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if self.cut.is_set():
                client.close()
                continue
            upstream = socket.create_connection(self.target)
            self.open += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(a: socket.socket, b: socket.socket) -> None:
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def down(self) -> None:
        self.cut.set()
        for s in self.open:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self.open.clear()

    def up(self) -> None:
        self.cut.clear()


def test_neo4j_down_mid_recall_is_a_store_error_and_recall_resumes(server: dict[str, str], embedder: Any,
                                                                    monkeypatch: pytest.MonkeyPatch):
    host, port = server["uri"].rsplit("/", 1)[-1].split(":")
    proxy = Proxy((host, int(port)))
    store = Neo4jStore(f"bolt://127.0.0.1:{proxy.port}", server["user"], server["password"], max_retry_time=1.0,
                       connection_timeout=2.0)
    with Memory(store, settings=Settings(neo4j_read="store"), embedder=embedder) as memory:
        assert memory.recall(QUESTIONS[1]).hits
        read = Neo4jReader._read

        def cut_then_read(self: Neo4jReader, *args: Any, **params: Any) -> Any:
            proxy.down()  # the recall has read the revision; its next statement finds Neo4j gone
            return read(self, *args, **params)

        monkeypatch.setattr(Neo4jReader, "_read", cut_then_read)
        with pytest.raises(StoreError, match="cannot reach Neo4j"):
            memory.recall(QUESTIONS[2])
        monkeypatch.setattr(Neo4jReader, "_read", read)
        proxy.up()
        assert memory.recall(QUESTIONS[2]).hits, "the same memory serves again once Neo4j is back"
