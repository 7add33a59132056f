"""Neo4j end to end: the same hits as the embedded store, revision following between
memories, consistency after a killed writer, saved Browser queries, clear errors.

Run against ``NEO4J_URI`` (``eval "$(scripts/neo4j start)"``) or testcontainers; see the
``neo4j_server`` fixture. The module's first tests share one indexed sample graph;
the later ones wipe the database, so keep that order.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hippo import Memory, Settings
from hippo.datasets import SAMPLE
from hippo.errors import StoreError
from hippo.extract.base import Extraction, NamedEntity, Triple
from hippo.models import Passage
from hippo.store import open_store

try:
    import neo4j
except ImportError:  # the neo4j extra is missing: an error in CI, a skip elsewhere
    if os.environ.get("CI"):
        raise
    pytest.skip("the neo4j driver is not installed (pip install 'hippo[neo4j]')", allow_module_level=True)
from hippo.store.common import keyword_query as lucene_query  # noqa: E402  (both stores search the same words)
from hippo.store.neo4j import Neo4jStore, check_server_version, cypher_dir  # noqa: E402
from hippo.store.neo4j.connection import Connection  # noqa: E402

pytestmark = pytest.mark.neo4j


def _cypher(server: dict[str, str], query: str, **params: object) -> list[dict]:
    with neo4j.GraphDatabase.driver(server["uri"], auth=(server["user"], server["password"])) as driver:
        records, _, _ = driver.execute_query(query, params)
        return [r.data() for r in records]


def _open(server: dict[str, str]) -> Neo4jStore:
    return Neo4jStore(server["uri"], server["user"], server["password"])


# -- (a) the same hits as the embedded store ------------------------------------------------


@pytest.fixture(scope="module")
def questions() -> list[dict]:
    return json.loads((SAMPLE / "questions.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def neo4j_sample(neo4j_server, neo4j_wipe, embedder, sample_corpus) -> Iterator[Memory]:
    """The sample corpus indexed into a wiped Neo4j, once for the module's first tests."""
    neo4j_wipe()
    memory = Memory(_open(neo4j_server), embedder=embedder)
    result = memory.index(sample_corpus)
    assert result.passages_added == len(sample_corpus) and result.revision == 1
    yield memory
    memory.close()


def _hits(memory: Memory, question: str) -> list[tuple[str, float]]:
    return [(h.id, h.score) for h in memory.recall(question).hits]


def test_recall_gives_the_same_hits_as_the_embedded_store(neo4j_sample, sample_memory, questions, embedder,
                                                          neo4j_server, monkeypatch):
    # BM25 scores differ by backend (Lucene vs FTS5), so the keyword share of the
    # passage prior is off here: everything else must agree, to the rounding of the SQLite
    # store's float16 vectors (Neo4j keeps float32; scores then differ by < 5e-5 relative).
    for memory in (neo4j_sample, sample_memory):
        monkeypatch.setattr(memory.settings, "keyword_prior_share", 0.0)
    assert neo4j_sample.stats().model_dump(exclude={"store"}) == sample_memory.stats().model_dump(exclude={"store"})
    want = {q["id"]: _hits(sample_memory, q["question"]) for q in questions}
    for q in questions:
        got = _hits(neo4j_sample, q["question"])
        assert [i for i, _ in got] == [i for i, _ in want[q["id"]]], q["id"]
        assert [s for _, s in got] == pytest.approx([s for _, s in want[q["id"]]], rel=2e-4, abs=1e-9), q["id"]
    # A memory opened afresh loads the projection and vectors from Neo4j (store order): same hits.
    reloaded = Memory(_open(neo4j_server), embedder=embedder, settings=Settings(keyword_prior_share=0.0))
    try:
        assert reloaded.graph_stats() == sample_memory.graph_stats()
        for q in questions:
            assert [i for i, _ in _hits(reloaded, q["question"])] == [i for i, _ in want[q["id"]]], q["id"]
        question = questions[0]["question"]
        assert ([h.id for h in reloaded.retrieve(question, mode="dense", k=5)]
                == [h.id for h in sample_memory.retrieve(question, mode="dense", k=5)])
        assert len(reloaded.retrieve(question, mode="bm25", k=5)) == 5
    finally:
        reloaded.close()


def test_the_graph_reads_well_in_the_browser(neo4j_sample, neo4j_server, sample_corpus):
    rows = _cypher(neo4j_server, """
        MATCH (d:Document)-[:HAS_PASSAGE]->(p:Passage)-[:MENTIONS]->(e:Entity)
        RETURN count(DISTINCT d) AS documents, count(DISTINCT p) AS passages,
               all(x IN collect(p.name) WHERE x <> '') AS named,
               all(x IN collect(e.name) WHERE x <> '') AS entities_named""")
    assert rows == [{"documents": len(sample_corpus), "passages": len(sample_corpus), "named": True,
                     "entities_named": True}]
    [row] = _cypher(neo4j_server, """
        MATCH (a:Entity)-[s:SYNONYM]->(b:Entity)
        RETURN count(s) AS synonyms, all(x IN collect(a.id < b.id) WHERE x) AS ordered,
               COUNT { (x:Entity)-[:SYNONYM]->(y:Entity)-[:SYNONYM]->(x) } AS both_ways""")
    assert row["synonyms"] > 0 and row["ordered"] and row["both_ways"] == 0
    [row] = _cypher(neo4j_server, """
        MATCH (s:Entity)-[r:RELATES]->(o:Entity)
        RETURN count(r) AS facts, all(x IN collect(r.predicate <> '' AND r.passage_id STARTS WITH 'passage:'
                                                  AND r.subject_id = s.id AND r.object_id = o.id) WHERE x) AS ok""")
    assert row["facts"] > 0 and row["ok"]
    indexes = {r["name"]: r for r in _cypher(neo4j_server, "SHOW INDEXES YIELD name, type, state, options")}
    for name in ("passage_embedding", "entity_embedding", "fact_embedding"):
        assert indexes[name]["type"] == "VECTOR" and indexes[name]["state"] == "ONLINE"
        assert indexes[name]["options"]["indexConfig"]["vector.dimensions"] == 384
    assert indexes["passage_text"]["type"] == "FULLTEXT"
    _assert_vector_layout(neo4j_server)


def _assert_vector_layout(server: dict[str, str]) -> None:
    """Vectors live on (:Vector) nodes only, labelled by kind; the indexes answer from there."""
    [row] = _cypher(server, """
        RETURN COUNT { (p:Passage) WHERE p.embedding IS NOT NULL } + COUNT { (e:Entity) WHERE e.embedding IS NOT NULL }
               + COUNT { ()-[r:RELATES]->() WHERE r.embedding IS NOT NULL } AS on_records,
               COUNT { (p:Passage) WHERE NOT EXISTS { MATCH (v:PassageVector {hash: p.embed_hash}) } } AS passages,
               COUNT { (e:Entity) WHERE NOT EXISTS { MATCH (v:EntityVector {hash: e.embed_hash}) } } AS entities,
               COUNT { ()-[r:RELATES]->() WHERE NOT EXISTS { MATCH (v:FactVector {hash: r.embed_hash}) } } AS facts""")
    assert row == {"on_records": 0, "passages": 0, "entities": 0, "facts": 0}, "every record has its labelled vector"
    indexes = {r["name"]: r for r in _cypher(server, "SHOW VECTOR INDEXES YIELD name, labelsOrTypes, state")}
    assert {name: (r["labelsOrTypes"], r["state"]) for name, r in indexes.items()} == {
        "passage_embedding": (["PassageVector"], "ONLINE"), "entity_embedding": (["EntityVector"], "ONLINE"),
        "fact_embedding": (["FactVector"], "ONLINE")}
    # The way issue 16 will search: a passage's own vector finds it first.
    [row] = _cypher(server, """
        MATCH (p:Passage) WITH p ORDER BY p.seq LIMIT 1
        MATCH (v:Vector {hash: p.embed_hash})
        CALL db.index.vector.queryNodes('passage_embedding', 1, v.embedding) YIELD node, score
        MATCH (hit:Passage {embed_hash: node.hash})
        RETURN collect(hit.id) AS hits, p.id AS id, score""")
    assert row["id"] in row["hits"] and row["score"] > 0.99


# -- Browser queries ----------------------------------------------------------------------------

def _browse_files() -> list[Path]:
    return sorted((cypher_dir() / "browse").glob("*.cypher"))


def _saved_query(name: str, **values: object) -> tuple[str, dict[str, object]]:
    """A saved Browser query as pasted, or with the example values of its ``WITH`` line taken
    from ``values`` instead (as parameters)."""
    text = (cypher_dir() / "browse" / f"{name}.cypher").read_text(encoding="utf-8")
    query = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//")).strip()
    if values:
        header, rest = query.split("\n", 1)
        assert header.startswith("WITH "), f"{name}: the example values open the query"
        query = "WITH " + ", ".join(f"${key} AS {key}" for key in values) + "\n" + rest
    return query, dict(values)


def test_saved_browser_queries_run_on_the_sample(neo4j_sample, neo4j_server):
    files = _browse_files()
    assert {f.stem for f in files} == {"overview", "hubs", "entity_neighbourhood", "passages_mentioning",
                                       "passage_facts", "why_recalled"}
    for path in files:
        query, _ = _saved_query(path.stem)
        assert ";" not in query and ":param" not in query, f"{path.name}: one statement, pasted whole"
        rows = _cypher(neo4j_server, query)
        assert rows, f"{path.name} returned no row on the sample graph"
        if path.stem == "why_recalled":
            assert all(r["hops"] is not None and r["hops"] <= 4 for r in rows), rows
        if path.stem == "passage_facts":
            assert all(set(r) == {"subject", "predicate", "object", "passage", "fact"} for r in rows)
        if path.stem == "overview":  # one row per kind, each counted once
            counts = neo4j_sample.store.counts()
            by_kind = {r["kind"]: r["count"] for r in rows}
            assert len(by_kind) == len(rows)
            assert (by_kind["SYNONYM"], by_kind["MENTIONS"], by_kind["RELATES"]) == (
                counts["synonyms"], counts["mentions"], counts["facts"])


def test_why_recalled_explains_a_live_recall(neo4j_sample, neo4j_server, questions):
    """The saved query, fed from an actual recall, finds a path from a seed to each top hit."""
    for q in questions[:5]:
        recall = neo4j_sample.recall(q["question"])
        seeds = [s.id for s in recall.seeds]
        if not seeds:
            continue
        for hit in recall.hits[:3]:
            query, values = _saved_query("why_recalled", seeds=seeds, passage=hit.id)
            rows = _cypher(neo4j_server, query, **values)
            assert any(r["hops"] is not None for r in rows), (q["id"], hit.id)


# -- (b) two memories on one Neo4j follow each other through the revision ------------------------


def test_two_memories_see_each_others_writes(neo4j_sample, neo4j_server, embedder):
    first = neo4j_sample
    second = Memory(_open(neo4j_server), embedder=embedder)
    try:
        assert second.graph_stats() == first.graph_stats()
        before = first.stats().revision
        added = first.index([{"title": "Quillon Reef", "text": "Quillon Reef lies north of Caldry. The reef "
                              "was charted by the surveyor Maren Oddvik in 1881."}])
        assert added.revision == before + 1
        hits = [h.title for h in second.recall("Who charted Quillon Reef?").hits]
        assert "Quillon Reef" in hits[:3]
        assert second.stats().revision == before + 1 and second.graph_stats() == first.graph_stats()
        second.index([{"title": "Maren Oddvik", "text": "Maren Oddvik was a surveyor born in Port Anselm."}])
        assert "Maren Oddvik" in [h.title for h in first.recall("Where was Maren Oddvik born?").hits][:3]
        assert first.stats() == second.stats()
        assert first.graph_stats() == second.graph_stats()
    finally:
        second.close()


# -- (c) a writer killed mid-transaction leaves the graph consistent -------------------------------

_PER_BATCH = 300  # documents per index call
_MENTIONS = 6  # entities each synthetic passage mentions
_FACTS = 5  # facts each synthetic passage holds


class _HashEmbedder:
    """Deterministic unit vectors from a text's hash: no model to load in the child."""

    name = "test-hash-16"
    dim = 16

    def encode(self, texts: list[str]) -> np.ndarray:
        rows = [np.random.default_rng(int.from_bytes(hashlib.sha1(t.encode()).digest()[:8], "little"))
                .normal(size=self.dim) for t in texts]
        matrix = np.array(rows, dtype=np.float32).reshape(len(texts), self.dim)
        return matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-9)


class _WordExtractor:
    """Every word after the first is an entity; consecutive ones make a fact."""

    name = "test-words"

    def extract(self, passages: list[Passage]) -> list[Extraction]:
        out = []
        for p in passages:
            names = p.text.rstrip(".").split()[1:]
            out.append(Extraction(entities=[NamedEntity(name=n) for n in names],
                                  triples=[Triple(subject=a, predicate="precedes", object=b)
                                           for a, b in zip(names, names[1:], strict=False)]))
        return out


def _synthetic(round_no: int, batch: int) -> list[dict]:
    docs = []
    for i in range(_PER_BATCH):
        own = [f"R{round_no}B{batch}D{i}W{j}" for j in range(_MENTIONS - 1)]
        docs.append({"title": f"r{round_no}b{batch}", "text": f"Doc {' '.join([f'Hub{i % 7}', *own])}."})
    return docs


class _CountingTransaction:
    """A write transaction that says each statement it runs, and at statement ``pause_at`` holds the
    transaction open (the parent kills the process then, so the kill is inside it for certain)."""

    def __init__(self, tx: Any, pause_at: int) -> None:
        self._tx, self._pause_at, self._statements = tx, pause_at, 0

    def run(self, *args: Any, **kwargs: Any) -> Any:
        result = self._tx.run(*args, **kwargs)
        self._statements += 1
        if self._statements == self._pause_at:
            result.consume()  # the statement's writes are on the server, uncommitted
            print(f"paused {self._statements}", flush=True)
            time.sleep(600)
        print(f"statement {self._statements}", flush=True)
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tx, name)


def _child(uri: str, user: str, password: str, round_no: int, pause_write: int, pause_at: int) -> None:
    """Index batch after batch until killed, saying when each store write starts and ends and each
    statement inside it; write number ``pause_write`` (from 1) holds its transaction open after
    statement ``pause_at`` (0: never)."""
    store = Neo4jStore(uri, user, password)
    write, transaction = store.write, Connection.transaction
    writes, pause = 0, -1  # -1: not inside a store write

    def traced(batch):  # type: ignore[no-untyped-def]
        nonlocal writes, pause
        writes += 1
        pause = pause_at if writes == pause_write else 0
        print(f"write-begin {writes}", flush=True)
        revision = write(batch)
        pause = -1
        print(f"write-end {revision}", flush=True)
        return revision

    def counted(self: Connection, doing: str, work: Any) -> Any:
        if pause < 0:
            return transaction(self, doing, work)
        return transaction(self, doing, lambda tx: work(_CountingTransaction(tx, pause)))

    store.write = traced  # type: ignore[method-assign]
    Connection.transaction = counted  # type: ignore[method-assign]
    # One index call, one transaction: the kill must land inside it.
    memory = Memory(store, embedder=_HashEmbedder(), extractor=_WordExtractor(),
                    settings=Settings(index_batch_documents=_PER_BATCH))
    print("ready", flush=True)
    for batch in range(1_000):
        memory.index(_synthetic(round_no, batch))


def _read_line(proc: subprocess.Popen, timeout: float) -> str:
    selector = selectors.DefaultSelector()
    selector.register(proc.stdout, selectors.EVENT_READ)
    try:
        if not selector.select(timeout):
            raise AssertionError(f"child said nothing for {timeout} s")
        return proc.stdout.readline().strip()
    finally:
        selector.close()


def _wait_for_no_other_transactions(server: dict[str, str], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        running = _cypher(server, "SHOW TRANSACTIONS YIELD transactionId, currentQuery "
                                  "WHERE NOT coalesce(currentQuery, '') STARTS WITH 'SHOW TRANSACTIONS' "
                                  "RETURN transactionId, currentQuery")
        if not running:
            return
        assert time.monotonic() < deadline, f"transactions still open after {timeout} s: {running}"
        time.sleep(0.2)


def _spawn_writer(server: dict[str, str], round_no: int, pause_write: int, pause_at: int,
                  err: Path) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, __file__, "child", server["uri"], server["user"], server["password"], str(round_no),
         str(pause_write), str(pause_at)],
        stdout=subprocess.PIPE, stderr=open(err, "w"), text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert _read_line(proc, 120) == "ready", err.read_text()
    return proc


def _read_write(proc: subprocess.Popen) -> list[str]:
    """The lines of one store write the child lets finish, from ``write-begin`` to ``write-end``."""
    lines = [_read_line(proc, 300)]
    assert lines[0].startswith("write-begin"), lines
    while not lines[-1].startswith("write-end"):
        lines.append(_read_line(proc, 300))
    return lines


def test_killing_a_writer_mid_transaction_leaves_the_graph_consistent(neo4j_store, neo4j_server, tmp_path):
    neo4j_store().close()  # wiped and schema'd
    rng = random.Random(7)
    # Round 0 lets two writes commit, learning how many statements and how long one write takes, then
    # kills the third at a random moment (it may land anywhere, even after COMMIT was sent). Each later
    # round lets 0 or 1 write commit and kills the next while it holds its transaction open after a
    # random statement: the kill is inside an open transaction with part of the batch written.
    proc = _spawn_writer(neo4j_server, 0, 0, 0, tmp_path / "child0.err")
    try:
        durations, statements = [], []
        for _ in range(2):
            start = time.perf_counter()
            lines = _read_write(proc)
            durations.append(time.perf_counter() - start)
            statements.append(sum(line.startswith("statement") for line in lines))
        assert min(statements) > 3, statements
        assert _read_line(proc, 300).startswith("write-begin")
        time.sleep(rng.uniform(0.2, 0.8) * min(durations))
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait(30)
    for round_no in (1, 2):
        let_finish = rng.randint(0, 1)
        pause_at = rng.randint(1, min(statements) - 1)
        proc = _spawn_writer(neo4j_server, round_no, let_finish + 1, pause_at, tmp_path / f"child{round_no}.err")
        try:
            for _ in range(let_finish):
                _read_write(proc)
            assert _read_line(proc, 300).startswith("write-begin")
            line = _read_line(proc, 300)
            while line.startswith("statement"):
                line = _read_line(proc, 300)
            assert line == f"paused {pause_at}", line
            proc.send_signal(signal.SIGKILL)
            assert "write-end" not in proc.stdout.read()
        finally:
            proc.kill()
            proc.wait(30)
    # A kill can land after the child sent COMMIT: the server then finishes that commit on its own
    # time. Read the graph once no transaction of a dead child is left open or committing.
    _wait_for_no_other_transactions(neo4j_server)

    # Every batch is all or nothing, and every passage has all its mentions and facts.
    batches = _cypher(neo4j_server, """
        MATCH (d:Document)
        RETURN d.title AS batch, count(d) AS documents, sum(COUNT { (d)-[:HAS_PASSAGE]->(:Passage) }) AS passages""")
    assert batches and all(b["documents"] == b["passages"] == _PER_BATCH for b in batches), batches
    [check] = _cypher(neo4j_server, """
        MATCH (p:Passage)
        RETURN count(p) AS passages,
               count(CASE WHEN COUNT { (p)-[:MENTIONS]->(:Entity) } <> $mentions THEN 1 END) AS wrong_mentions,
               count(CASE WHEN COUNT { ()-[:RELATES {passage_id: p.id}]->() } <> $facts THEN 1 END) AS wrong_facts,
               count(CASE WHEN NOT EXISTS { (:Document)-[:HAS_PASSAGE]->(p) } THEN 1 END) AS orphans,
               count(CASE WHEN NOT EXISTS { MATCH (v:Vector {hash: p.embed_hash}) } THEN 1 END) AS no_vector,
               count(CASE WHEN NOT EXISTS { MATCH (v:PassageVector {hash: p.embed_hash})
                                            WHERE v.embedding IS NOT NULL } THEN 1 END) AS no_embedding""",
                          mentions=_MENTIONS, facts=_FACTS)
    assert check == {"passages": _PER_BATCH * len(batches), "wrong_mentions": 0, "wrong_facts": 0,
                     "orphans": 0, "no_vector": 0, "no_embedding": 0}
    [check] = _cypher(neo4j_server, """
        MATCH (e:Entity)
        RETURN count(CASE WHEN NOT EXISTS { (:Passage)-[:MENTIONS]->(e) } THEN 1 END) AS unmentioned,
               count(CASE WHEN NOT EXISTS { MATCH (v:Vector {hash: e.embed_hash}) } THEN 1 END) AS no_vector""")
    assert check == {"unmentioned": 0, "no_vector": 0}
    # One revision per committed index call, and the next writer carries on from there.
    store = neo4j_store()
    assert store.revision() == len(batches)
    memory = Memory(store, embedder=_HashEmbedder(), extractor=_WordExtractor())
    assert memory.index(_synthetic(99, 0)[:10]).revision == len(batches) + 1
    assert memory.graph_stats()["passages"] == _PER_BATCH * len(batches) + 10


# -- (d) clear, one-line errors --------------------------------------------------------------------


def _one_line(exc: pytest.ExceptionInfo[StoreError]) -> str:
    message = str(exc.value)
    assert "\n" not in message and message.strip() == message and len(message) < 400
    # No driver traceback attached: nothing chained, or the chain suppressed (``from None``).
    assert exc.value.__cause__ is None
    assert exc.value.__context__ is None or exc.value.__suppress_context__
    return message


def test_wrong_password_is_one_clear_line(neo4j_server):
    with pytest.raises(StoreError) as exc:
        Neo4jStore(neo4j_server["uri"], neo4j_server["user"], "not-the-password")
    message = _one_line(exc)
    assert "wrong user or password" in message and "not-the-password" not in message


def test_unreachable_host_is_one_clear_line():
    started = time.perf_counter()
    with pytest.raises(StoreError) as exc:
        open_store("bolt://neo4j:secret@127.0.0.1:1")
    message = _one_line(exc)
    assert message.startswith("cannot reach Neo4j at bolt://neo4j@127.0.0.1:1") and "secret" not in message
    assert time.perf_counter() - started < 30
    with pytest.raises(StoreError) as exc:
        open_store("neo4j://nowhere.invalid:7687")
    assert "cannot reach Neo4j" in _one_line(exc)


def test_an_unsupported_server_version_is_refused(neo4j_server, monkeypatch):
    for version in ("4.4.30", "5.25.1", "5.20.0-aura"):
        with pytest.raises(StoreError, match=r"needs Neo4j 5\.26 or newer"):
            check_server_version(version, "community", "bolt://x")
    for version in ("5.26.0", "5.26.30", "5.27.0", "2025.01.0", "2026.2.1"):
        check_server_version(version, "enterprise", "bolt://x")
    real = Connection.read

    def old_server(self, name, doing, **params):  # type: ignore[no-untyped-def]
        if name == "server_components":
            return [{"name": "Neo4j Kernel", "versions": ["5.13.0"], "edition": "community"}]
        return real(self, name, doing, **params)

    monkeypatch.setattr(Connection, "read", old_server)
    with pytest.raises(StoreError) as exc:
        _open(neo4j_server)
    assert "runs 5.13.0 (community); hippo needs Neo4j 5.26 or newer" in _one_line(exc)


def test_urls_and_environment(neo4j_server, monkeypatch):
    uri = neo4j_server["uri"]
    scheme, rest = uri.split("://", 1)
    monkeypatch.setenv("NEO4J_USER", "nobody")
    monkeypatch.setenv("NEO4J_PASSWORD", "wrong")
    password = neo4j_server["password"].replace("%", "%25").replace("@", "%40").replace(":", "%3A")
    store = open_store(f"{scheme}://{neo4j_server['user']}:{password}@{rest}")
    try:
        assert isinstance(store, Neo4jStore) and neo4j_server["password"] not in store.url
        assert store.url == f"{scheme}://{neo4j_server['user']}@{rest}"
        assert store.revision() >= 0
    finally:
        store.close()
    monkeypatch.setenv("NEO4J_USER", neo4j_server["user"])
    monkeypatch.setenv("NEO4J_PASSWORD", neo4j_server["password"])
    monkeypatch.setenv("NEO4J_DATABASE", "neo4j")
    store = Neo4jStore.from_url(uri)
    try:
        assert store.url.endswith("/neo4j") and store.counts()["documents"] >= 0
    finally:
        store.close()
    with pytest.raises(StoreError) as exc:
        Neo4jStore.from_url(f"{uri}/nosuchdb")
    assert "no database 'nosuchdb'" in _one_line(exc)
    with pytest.raises(StoreError, match="not a Neo4j URL"):
        Neo4jStore.from_url("http://127.0.0.1:7474")


def test_lucene_query_quotes_every_word():
    assert lucene_query('Südhof AND (tide-clock) OR "x" title:y~ \\ *') == (
        '"südhof" OR "and" OR "tide" OR "clock" OR "or" OR "x" OR "title" OR "y"')
    assert lucene_query("?! -- ::") == ""


if __name__ == "__main__" and sys.argv[1:2] == ["child"]:
    _child(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7]))


class _Building:
    """A Connection whose server is still building two indexes when the wait runs out (a million
    vectors take most of an hour to index here; the driver's side of it is what is tested)."""

    url = "bolt://neo4j@db.example:7687"

    def schema(self, statement: str, doing: str, **params: object) -> None:
        raise StoreError(f"Neo4j refused {doing} at {self.url}: Expected all indexes to come online within a "
                         "reasonable time")

    def read(self, name: str, doing: str, **params: object) -> list[dict]:
        assert name == "hippo_indexes"
        return [{"name": "fact_embedding", "state": "POPULATING", "populationPercent": 41.6},
                {"name": "entity_embedding", "state": "ONLINE", "populationPercent": 100.0},
                {"name": "passage_embedding", "state": "POPULATING", "populationPercent": 2.0}]


def test_an_index_still_being_built_is_named_with_how_far_it_is():
    from hippo.store.neo4j.schema import await_indexes

    with pytest.raises(StoreError) as exc:
        await_indexes(_Building(), 30)  # type: ignore[arg-type]
    message = _one_line(exc)
    assert "still building the index fact_embedding (42%), passage_embedding (2%) after 30 s" in message
    assert "entity_embedding" not in message and "hippo neo4j indexes --store bolt://neo4j@db.example:7687 " \
        "--timeout 0" in message
