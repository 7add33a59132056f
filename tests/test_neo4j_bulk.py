"""The bulk initial load (``hippo neo4j import``) and Neo4j failures, against a Neo4j server of the
test's own: this module starts one in a temporary home (the jars are the ones ``scripts/neo4j``
fetched), because a bulk import stops and starts its server, and so do the failure tests."""

from __future__ import annotations

import json
import os
import socket
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import rcp
from rcp import RcpError

from hippo import Memory
from hippo.api.config import ServerSettings
from hippo.api.rcp import Service
from hippo.api.rcp.http import background
from hippo.datasets import SAMPLE
from hippo.errors import StoreError
from hippo.store import SQLiteStore
from hippo.store.neo4j import Neo4jStore
from hippo.store.neo4j.bulk import admin_stages, local_server
from hippo.store.neo4j.local_server import LocalNeo4j
from hippo.store.neo4j.vectors import vector_of
from tests.conftest import unavailable
from tests.test_neo4j_degrees import (FACTS, RECOUNT, SPACES, assert_counted, assert_facts_follow_their_passages,
                                      assert_spaces_counted)

pytestmark = [pytest.mark.neo4j, pytest.mark.own_neo4j]
REPO = Path(__file__).resolve().parents[1]
PASSWORD = "hippo-password"
QUESTIONS = ["Who governs the island on which the painter Greta Südhof was born?",
             "Which river flows past the town where the tide-clock was built?", "harbour lighthouse keeper"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Server:
    home: Path
    url: str
    env: dict[str, str]

    def store(self, **kwargs: object) -> Neo4jStore:
        return Neo4jStore(self.url, "neo4j", PASSWORD, **kwargs)


def _jars() -> Path | None:
    """A lib/ that scripts/neo4j already filled (the suite's own server's), to link instead of copy."""
    version = "5.26.30"
    for home in (os.environ.get("HIPPO_NEO4J_HOME"), Path.home() / ".cache" / "hippo" / f"neo4j-{version}"):
        if home and (Path(home) / "lib" / ".complete").is_file():
            return Path(home) / "lib"
    return None


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    home = tmp_path_factory.mktemp("neo4j-home")
    if jars := _jars():
        (home / "lib").symlink_to(jars, target_is_directory=True)
    bolt = free_port()
    env = {**os.environ, "HIPPO_NEO4J_HOME": str(home), "NEO4J_BOLT_PORT": str(bolt),
           "NEO4J_HTTP_PORT": str(free_port()), "NEO4J_PASSWORD": PASSWORD}
    started = subprocess.run([str(REPO / "scripts" / "neo4j"), "start"], env=env, capture_output=True, text=True,
                             timeout=400, check=False)
    if started.returncode != 0:
        unavailable(f"cannot start a Neo4j of this test's own: {started.stderr[-800:]}")
    yield Server(home, f"bolt://127.0.0.1:{bolt}", env)
    crash(LocalNeo4j.at(home))  # a throw-away home: no clean shutdown needed


def crash(neo4j: LocalNeo4j) -> None:
    """Kill the server as a crash would (and as fast)."""
    if (pid := neo4j.pid()) is not None:
        os.kill(pid, signal.SIGKILL)
        while Path(f"/proc/{pid}").exists():
            time.sleep(0.1)


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory, embedder) -> Path:
    """A SQLite hippo store with everything a store holds: documents, a remembered memory, a
    forgotten document, synonyms, vectors of three kinds, a key-value entry."""
    path = tmp_path_factory.mktemp("bulk-source") / "source.db"
    corpus = json.loads((SAMPLE / "corpus.json").read_text(encoding="utf-8"))
    with Memory(SQLiteStore(path), embedder=embedder) as memory:
        memory.index([{"id": f"sample-{i:02d}", **c} for i, c in enumerate(corpus[:20])])
        memory.remember('The harbour lighthouse keeper said "no" to the tide-clock, twice.\nThen yes.')
        memory.forget("sample-03")
        memory.store.put_values("notes", {"greeting": "héllo, \"world\""})
    return path


def hippo(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hippo.cli", *args], env=env, capture_output=True, text=True,
                          timeout=600, check=False)


@pytest.fixture(scope="module")
def imported(server: Server, source: Path) -> dict:
    done = hippo("neo4j", "import", "--from", str(source), "--store", server.url, "--home", str(server.home),
                 "--json", env=server.env)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def test_bulk_import_gives_the_same_store(imported: dict, server: Server, source: Path) -> None:
    sqlite, neo = SQLiteStore(source), server.store()
    try:
        assert imported["counts"]["passages"] == 21 and imported["relationships"] > 300
        stages = imported["admin_stages"]  # neo4j-admin's own report, read from its output
        assert {"Node import", "Relationship import"} <= stages.keys() and sum(stages.values()) > 0
        assert neo.revision() == sqlite.revision() > 0
        assert (neo.embedding_model(), neo.embedding_backend()) == (sqlite.embedding_model(),
                                                                    sqlite.embedding_backend())
        assert neo.counts() == sqlite.counts()
        a, b = sqlite.load_graph(), neo.load_graph()
        assert (a.passages, a.entities, a.facts, a.texts, a.titles) == (b.passages, b.entities, b.facts, b.texts,
                                                                         b.titles)
        assert sorted(a.mentions) == sorted(b.mentions)
        assert sorted(a.synonyms) == sorted(b.synonyms)
        docs = [d.id for d in sqlite.find_documents(live=False)]
        assert neo.documents(docs) == sqlite.documents(docs) and len(docs) == 21
        passages = [p.id for p in sqlite.document_passages(docs)]
        assert neo.passages(passages) == sqlite.passages(passages)
        assert any(p.forgotten_at for p in neo.passages(passages))
        assert neo.entities(a.entities) == sqlite.entities(a.entities)
        facts = [f[0] for f in a.facts]
        assert neo.facts(facts) == sqlite.facts(facts)
        for kind in ("passage", "entity", "fact"):
            ids, hashes, matrix = neo.load_vectors(kind)
            want = sqlite.load_vectors(kind)
            assert (ids, hashes) == (want[0], want[1]) and np.array_equal(matrix, want[2])
        with neo.db.session() as session:  # what the vector indexes read: the same numbers, to 1e-12
            rows = list(session.run("MATCH (v:Vector) RETURN v.vector AS vector, v.embedding AS embedding"))
        assert len(rows) == imported["counts"]["vectors"]
        for row in rows:
            assert np.abs(np.asarray(row["embedding"]) - vector_of(row["vector"])).max() < 1e-12
        with neo.db.session() as session:  # filled after neo4j-admin, as a migration fills them
            assert_counted([dict(r) for r in session.run(RECOUNT)])
            assert_facts_follow_their_passages([dict(r) for r in session.run(FACTS)])
            assert_spaces_counted([dict(r) for r in session.run(SPACES)])
        assert neo.get_values("notes", ["greeting"]) == {"greeting": 'héllo, "world"'}
        assert neo.keyword_search("lighthouse keeper", 1)[0][0] == sqlite.keyword_search("lighthouse keeper", 1)[0][0]
    finally:
        sqlite.close()
        neo.close()


def test_the_imported_store_recalls_alike_and_takes_transactional_writes(imported: dict, server: Server,
                                                                        source: Path, embedder) -> None:
    with Memory(SQLiteStore(source), embedder=embedder) as a, Memory(server.store(), embedder=embedder) as b:
        for question in QUESTIONS:
            assert [h.id for h in b.recall(question).hits] == [h.id for h in a.recall(question).hits]
        before = b.store.revision()
        b.index([{"id": "after-import", "title": "Quay", "text": "The quay of Marrow was rebuilt in 1920."}])
        assert b.store.revision() == before + 1
        assert "after-import" in {d.id for d in b.store.find_documents()}
    with Memory(server.store(), embedder=embedder) as again:  # another process's view of the write
        assert any(h.id.startswith("passage:") for h in again.recall("quay of Marrow rebuilt").hits)


def test_bulk_import_refuses_a_database_that_is_not_empty(imported: dict, server: Server, source: Path) -> None:
    with closing(server.store()) as store:
        before = store.counts()
        done = hippo("neo4j", "import", "--from", str(source), "--store", server.url, "--home", str(server.home),
                     env=server.env)
        assert done.returncode == 2
        assert "is not empty" in done.stderr and "hippo index --store" in done.stderr
        assert store.counts() == before


def test_bulk_import_needs_the_servers_own_home(server: Server, tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="loopback"):
        local_server("bolt://db.example.com:7687", server.home)
    with pytest.raises(StoreError, match="different servers"):
        local_server("bolt://127.0.0.1:1", server.home)
    with pytest.raises(StoreError, match="not a Neo4j home"):
        local_server(server.url, tmp_path)
    done = hippo("neo4j", "import", "--from", str(tmp_path / "none.db"), "--store", server.url, env={
        **server.env, "HIPPO_NEO4J_HOME": ""})
    assert done.returncode == 2 and "--home is required" in done.stderr


def test_missing_indexes_are_named_with_the_command_that_creates_them(imported: dict, server: Server) -> None:
    with closing(server.store()) as opened:
        opened.db.schema("DROP INDEX passage_embedding IF EXISTS", "test")
        opened.db.schema("DROP INDEX passage_text IF EXISTS", "test")
        opened.db.schema("DROP INDEX passage_words IF EXISTS", "test")
        with pytest.raises(StoreError, match=r"no index passage_text.*'hippo neo4j indexes --store "):
            opened.keyword_search("lighthouse", 3)
        with pytest.raises(StoreError, match=r"no index passage_text, passage_words, passage_embedding.*hippo neo4j "
                                              r"indexes"):
            server.store(create_schema=False)
        done = hippo("neo4j", "indexes", "--store", server.url, "--timeout", "600", env=server.env)
        assert done.returncode == 0, done.stderr
        assert "5 indexes online" in done.stdout
        with closing(server.store(create_schema=False)) as reader:
            assert reader.keyword_search("lighthouse", 3)


def test_vector_indexes_are_unquantized_and_an_old_int8_one_is_rebuilt_on_request(imported: dict,
                                                                                     server: Server) -> None:
    """hippo builds its vector indexes without Lucene's int8 codes (Neo4j's default found 0.74-0.93 of
    the exact top 10 where hippo's find 0.90-1.00, scripts/README-neo4j.md); one a database kept from
    before is searched as it is until ``hippo neo4j indexes --unquantize`` builds it again. A store-side
    search takes a float index's own scores and scores an int8 index's hits again: exact either way."""
    def quantized() -> dict[str, bool]:
        with closing(server.store(create_schema=False)) as opened:
            return {r["name"]: r["quantized"] for r in opened.db.read("vector_indexes", "test")}

    def searched_as_scored_exactly(int8: frozenset[str]) -> None:
        with closing(server.store(create_schema=False)) as opened:
            reader = opened.reader(None)
            assert reader.int8 == int8
            with opened.db.session() as session:
                held = session.run("MATCH (v:FactVector) RETURN v.embedding AS e ORDER BY v.hash LIMIT 1").single()
            query = np.asarray(held["e"]) + 0.4 * np.cos(np.arange(len(held["e"])))  # near it, not on it
            query /= np.linalg.norm(query)
            found = {r[0]: r[1] for r in reader.nearest("facts", query, [8])[0]}
            exact = {r[0]: r[1] for r in reader.exact("facts", query, 8)[0]}
            assert len(found) == 8 and len(set(found) & set(exact)) >= 6
            assert all(abs(found[f] - exact[f]) < 1e-6 for f in set(found) & set(exact))

    assert quantized() == {"passage_embedding": False, "entity_embedding": False, "fact_embedding": False}
    searched_as_scored_exactly(frozenset())
    with closing(server.store()) as opened:
        opened.db.schema("DROP INDEX fact_embedding", "test")
        opened.db.schema("CREATE VECTOR INDEX fact_embedding FOR (v:FactVector) ON v.embedding OPTIONS {indexConfig: "
                         "{`vector.dimensions`: $dim, `vector.similarity_function`: 'cosine'}}", "test",
                         dim=opened.embedding_model()[1])
    assert quantized()["fact_embedding"] is True  # Neo4j's default
    done = hippo("neo4j", "indexes", "--store", server.url, "--timeout", "600", env=server.env)
    assert done.returncode == 0, done.stderr
    assert quantized()["fact_embedding"] is True
    searched_as_scored_exactly(frozenset({"fact_embedding"}))
    doctor = hippo("doctor", "--json", "--store", server.url, env={**server.env, "HF_HUB_OFFLINE": "1"})
    store = next(c for c in json.loads(doctor.stdout) if c["name"] == "store")
    assert store["status"] == "warn" and "fact_embedding" in store["detail"] and "--unquantize" in store["fix"]
    done = hippo("neo4j", "indexes", "--unquantize", "--store", server.url, "--timeout", "600", env=server.env)
    assert done.returncode == 0, done.stderr
    assert quantized() == {"passage_embedding": False, "entity_embedding": False, "fact_embedding": False}
    with closing(server.store(create_schema=False)) as reader, reader.db.session() as session:
        found = session.run("MATCH (v:FactVector) WITH v LIMIT 1 CALL db.index.vector.queryNodes('fact_embedding', "
                            "3, v.embedding) YIELD node RETURN v.hash AS wanted, collect(node.hash) AS found").single()
        assert found["found"][0] == found["wanted"]  # the rebuilt index answers


def test_neo4j_down_mid_recall_is_a_store_error_and_serving_resumes(imported: dict, server: Server,
                                                                     embedder) -> None:
    memory = Memory(server.store(max_retry_time=1.0), embedder=embedder)
    service = Service(Memory(server.store(max_retry_time=1.0), embedder=embedder),
                      ServerSettings(max_documents=10, threads=2))
    try:
        with background(service) as address:
            client = rcp.Client()
            client._transport = rcp.HttpTransport(address, timeout=120)
            client._handshake()
            assert memory.recall(QUESTIONS[0]).hits
            built = client.memory_build(documents=[{"id": "rcp-doc", "text": "The ferry of Marrow runs at dawn."}],
                                        scope="global")
            assert client.memory_recall(QUESTIONS[0], memory_id=built["memoryId"])["hits"]
            neo4j = LocalNeo4j.at(server.home)
            crash(neo4j)
            try:
                with pytest.raises(StoreError, match="cannot reach Neo4j at bolt://neo4j@127.0.0.1"):
                    memory.recall(QUESTIONS[0])
                with pytest.raises(RcpError) as raised:
                    client.memory_recall(QUESTIONS[0], memory_id=built["memoryId"])
                assert raised.value.code == -32010 and "cannot reach Neo4j" in str(raised.value)
            finally:
                neo4j.start()
            for _ in range(60):  # the database comes online a little after the server answers
                try:
                    assert memory.recall(QUESTIONS[0]).hits
                    break
                except StoreError:
                    pass
            assert client.memory_recall(QUESTIONS[0], memory_id=built["memoryId"])["hits"]
    finally:
        memory.close()
        service.close()


def test_routing_urls_and_read_transactions(imported: dict, server: Server) -> None:
    port = server.url.rsplit(":", 1)[1]
    routed = Neo4jStore.from_url(f"neo4j://neo4j:{PASSWORD}@127.0.0.1:{port}")
    try:
        assert routed.counts()["passages"] >= 21
        # reads run in read transactions (a cluster sends them to followers): a write through them is refused
        with pytest.raises(StoreError, match="AccessMode|read access mode|not allowed"):
            routed.db.read("meta_bump", "writing through the read path", meta="hippo", seq=0)
        revision = routed.revision()
        routed.put_values("notes", {"routed": "yes"})  # writes go through write transactions
        assert routed.get_values("notes", ["routed"]) == {"routed": "yes"}
        assert routed.revision() == revision  # the key-value area moves no revision
    finally:
        routed.close()


def test_the_import_tools_stages_are_read_from_its_output():
    """Where an import's time went, as ``neo4j-admin`` 5.26 prints it (seconds)."""
    output = ("(1/4) Node import 2026-12-02 03:15:32.484+0000\n  Estimated number of nodes: 139.61 k\n"
              "Node import COMPLETED in 1m 54s 77ms\n(2/4) Relationship import 2026-12-02 03:16:26.562+0000\n"
              "Relationship import COMPLETED in 2s 527ms\nRelationship linking COMPLETED in 806ms\n"
              "IMPORT DONE in 1m 58s 149ms. \n")
    assert admin_stages(output) == pytest.approx({"Node import": 114.077, "Relationship import": 2.527,
                                                  "Relationship linking": 0.806})
    assert admin_stages("IMPORT DONE in 3s.") == {}
