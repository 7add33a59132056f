"""Shared fixtures: one embedder and one spaCy pipeline for the whole run."""

from __future__ import annotations

import os

os.environ["HF_HUB_OFFLINE"] = "1"  # tests must never reach for a model hub
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# Neo4j databases' saved derived states (one folder per store, and each wiped test database is a new
# store) go to a folder of the run's own, not the user's cache; the model exports stay shared.
os.environ.setdefault("HIPPO_DERIVED_DIR", __import__("tempfile").mkdtemp(prefix="hippo-derived-"))

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from hippo import Memory, Settings
from hippo.datasets import SAMPLE, datasets_root
from hippo.embed import Embedder, open_embedder
from hippo.store import SQLiteStore, Store


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    """The default encoder (ONNX fp32: torch's vectors; exported to HIPPO_CACHE_DIR on the first run), as
    every user gets. The suite is embedding-bound, and this one is faster than torch."""
    return open_embedder(Settings())


@pytest.fixture(scope="session")
def sample_corpus() -> list[dict]:
    return json.loads((SAMPLE / "corpus.json").read_text(encoding="utf-8"))


def unavailable(reason: str) -> None:
    """Something a test needs is not on this machine: a failure under ``CI`` (where every test
    must run), a skip elsewhere (a fresh clone without ``../shared`` or a Neo4j server)."""
    if os.environ.get("CI", "").lower() not in ("", "0", "false"):
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def shared_datasets() -> Path:
    """The shared tuning sets (MuSiQue, HotpotQA, 2Wiki), never copied into the project."""
    root = datasets_root()
    if not root.is_dir():
        unavailable(f"shared datasets not found at {root}: set HIPPO_DATASETS to their folder")
    return root


@pytest.fixture
def open_memory(embedder: Embedder, tmp_path: Path) -> Iterator[Callable[..., Memory]]:
    """Open memories on fresh SQLite files (or a given store); all closed at teardown."""
    opened: list[Memory] = []

    def factory(store: Store | None = None, **settings: object) -> Memory:
        memory = Memory(store or SQLiteStore(tmp_path / f"m{len(opened)}.db"), settings=Settings(**settings),
                        embedder=embedder)
        opened.append(memory)
        return memory

    yield factory
    for memory in opened:
        memory.close()


@pytest.fixture(params=["sqlite", pytest.param("neo4j", marks=pytest.mark.neo4j)])
def memory_factory(request: pytest.FixtureRequest, open_memory: Callable[..., Memory]) -> Callable[..., Memory]:
    """Fresh memories on the parametrized store (Neo4j: one wiped database per test)."""
    if request.param == "neo4j":
        stores = request.getfixturevalue("neo4j_store")
        return lambda **settings: open_memory(stores(), **settings)
    return lambda **settings: open_memory(**settings)


@pytest.fixture(scope="module")
def sample_memory(embedder: Embedder, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Memory]:
    """The sample corpus, indexed once per module."""
    corpus = json.loads((SAMPLE / "corpus.json").read_text(encoding="utf-8"))
    memory = Memory(SQLiteStore(tmp_path_factory.mktemp("sample") / "sample.db"), embedder=embedder)
    memory.index(corpus)
    yield memory
    memory.close()


# -- running side by side (pytest-xdist, ``scripts/test`` runs two workers) ------------------

SHARED_NEO4J = {"neo4j_server", "neo4j_wipe", "neo4j_store"}


def _uses_the_shared_neo4j(item: pytest.Item) -> bool:
    if item.get_closest_marker("own_neo4j"):
        return False
    params = getattr(getattr(item, "callspec", None), "params", {})
    return bool(item.get_closest_marker("neo4j") or SHARED_NEO4J & set(item.fixturenames)
                or "neo4j" in params.values())


def pytest_itemcollected(item: pytest.Item) -> None:
    """Under ``--dist loadgroup`` each module runs on one worker (its module fixtures are built
    once), and every test of the shared Neo4j server on one worker, one after another: Community
    has a single database, which they wipe. (Marked as each test is collected: pytest-xdist reads
    the groups in its own ``pytest_collection_modifyitems``.)"""
    group = "neo4j" if _uses_the_shared_neo4j(item) else item.nodeid.split("::")[0]
    item.add_marker(pytest.mark.xdist_group(group))


# -- Neo4j -------------------------------------------------------------------------


def _docker_answers() -> bool:
    try:
        import docker

        client = docker.from_env(timeout=3)
        try:
            return bool(client.ping())
        finally:
            client.close()
    except Exception:
        return False


@pytest.fixture(scope="session")
def neo4j_server() -> Iterator[dict[str, str]]:
    """A Neo4j server: ``NEO4J_URI`` (+ ``NEO4J_USER``/``NEO4J_PASSWORD``) when set, else
    testcontainers' ``neo4j:5.26-community`` when a Docker engine answers. Without
    either, Neo4j tests fail under ``CI`` and skip elsewhere."""
    uri = os.environ.get("NEO4J_URI")
    if uri:
        yield {"uri": uri, "user": os.environ.get("NEO4J_USER", "neo4j"),
               "password": os.environ.get("NEO4J_PASSWORD", "")}
        return
    if _docker_answers():
        try:
            from testcontainers.community.neo4j import Neo4jContainer
        except ImportError:  # testcontainers < 4.14
            from testcontainers.neo4j import Neo4jContainer

        with Neo4jContainer("neo4j:5.26-community", username="neo4j", password="hippo-password") as container:
            yield {"uri": container.get_connection_url(), "user": container.username,
                   "password": container.password}
        return
    unavailable("no Neo4j: set NEO4J_URI (eval \"$(scripts/neo4j start)\") or run a Docker engine")


def wipe_neo4j(server: dict[str, str]) -> None:
    """Empty the database (Community has one user database): every node, and the vector
    indexes, whose dimension belongs to the model of the previous test."""
    import neo4j

    with neo4j.GraphDatabase.driver(server["uri"], auth=(server["user"], server["password"])) as driver:
        with driver.session() as session:
            session.run("MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 5000 ROWS").consume()
            names = [r["name"] for r in session.run("SHOW VECTOR INDEXES YIELD name")]
            for name in names:
                session.run("DROP INDEX $name IF EXISTS", name=name).consume()


@pytest.fixture(scope="session")
def neo4j_wipe(neo4j_server: dict[str, str]) -> Callable[[], None]:
    return lambda: wipe_neo4j(neo4j_server)


@pytest.fixture
def neo4j_store(neo4j_server: dict[str, str], neo4j_wipe: Callable[[], None]) -> Iterator[Callable[..., Store]]:
    """Open Neo4j stores on a database wiped once for this test; all closed at teardown."""
    from hippo.store.neo4j import Neo4jStore

    neo4j_wipe()
    opened: list[Store] = []

    def factory(**kwargs: object) -> Store:
        store = Neo4jStore(neo4j_server["uri"], neo4j_server["user"], neo4j_server["password"], **kwargs)
        opened.append(store)
        return store

    yield factory
    for store in opened:
        store.close()
