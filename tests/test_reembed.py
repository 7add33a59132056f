"""A store's embedding identity (model, dimension, backend) and ``hippo reembed``, on SQLite and Neo4j."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys

import numpy as np
import pytest

from hippo import Memory, Settings
from hippo.errors import Conflict, EmbeddingBackendMismatch
from hippo.memory.reembed import identity_of, reembed
from hippo.store.base import INT8_RECIPE
from hippo.store import SQLiteStore

DOCS = [{"title": "Aurora Bridge", "text": "The Aurora Bridge was designed by Lena Markov in Tromsø."},
        {"title": "Lena Markov", "text": "Lena Markov studied architecture in Riga."}]
QUESTION = "Where did the designer of the Aurora Bridge study?"


class Relabelled:
    """The suite's encoder under another backend name: vectors that must never mix with the real ones."""

    def __init__(self, inner, backend: str, *, fail_after: int | None = None) -> None:
        self.inner, self.name, self.dim, self.backend = inner, inner.name, inner.dim, backend
        self.fail_after, self.calls = fail_after, 0

    def encode(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        if self.fail_after is not None and self.calls > self.fail_after:
            raise RuntimeError("encoder died")
        return -self.inner.encode(texts)  # other vectors, recognizably


def _titles(result) -> list[str]:
    return [h.title for h in result.hits]


def test_a_legacy_store_counts_as_torch_and_is_refused_by_another_backend(tmp_path, embedder):
    path = tmp_path / "legacy.db"
    store = SQLiteStore(path)
    store.bind_embedding_model(embedder.name, embedder.dim)  # what every hippo before backends wrote
    store.close()
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT value FROM meta WHERE key = 'embedding_backend'").fetchone() == ("torch",)
        db.execute("DELETE FROM meta WHERE key = 'embedding_backend'")  # a store written before this change
    with pytest.raises(EmbeddingBackendMismatch) as refused:
        Memory(SQLiteStore(path), embedder=Relabelled(embedder, "onnx-int8"))
    message = str(refused.value)
    assert f"hippo reembed --store {path}" in message and "torch backend" in message and "onnx-int8" in message
    assert SQLiteStore(path).embedding_backend() == "torch"  # refused: nothing was written
    with Memory(SQLiteStore(path), embedder=embedder) as memory:  # ONNX fp32 gives torch's vectors: no re-embedding
        assert memory.stats().embedding_backend == "torch"


def test_a_store_of_the_earlier_int8_recipe_is_refused_by_todays_int8(tmp_path, embedder):
    path = tmp_path / "int8-v1.db"
    with Memory(SQLiteStore(path), embedder=Relabelled(embedder, "onnx-int8")) as memory:  # the all-int8 recipe
        memory.index(DOCS)
    with pytest.raises(EmbeddingBackendMismatch) as refused:
        Memory(SQLiteStore(path), embedder=Relabelled(embedder, INT8_RECIPE))
    message = str(refused.value)
    assert "earlier recipe of the onnx-int8 backend" in message and f"hippo reembed --store {path}" in message
    assert SQLiteStore(path).embedding_backend() == "onnx-int8"


def test_reembed_on_open_moves_the_store_and_recall_works(tmp_path, embedder):
    path = tmp_path / "moved.db"
    with Memory(SQLiteStore(path), embedder=Relabelled(embedder, "onnx-int8")) as memory:
        memory.index(DOCS)
        counts = memory.stats()
    with pytest.raises(EmbeddingBackendMismatch):
        Memory(SQLiteStore(path), embedder=embedder)
    with Memory(SQLiteStore(path), settings=Settings(reembed_on_open=True), embedder=embedder) as memory:
        stats = memory.stats()
        assert stats.embedding_backend == "onnx" and stats.revision == counts.revision + 1
        assert stats.model_dump(exclude={"revision", "embedding_backend"}) == \
            counts.model_dump(exclude={"revision", "embedding_backend"})
        assert "Lena Markov" in _titles(memory.recall(QUESTION))[:2]
        ids, hashes, matrix = memory.store.load_vectors("passage")
        texts = memory.store.embed_texts()
        # the store keeps float16: a MiniLM component (|x| < 0.25) within half a float16 step, 6e-5
        assert np.allclose(matrix, embedder.encode([texts[h] for h in hashes]), atol=1e-4)


def test_an_interrupted_reembed_changes_nothing_and_resumes(tmp_path, embedder):
    path = tmp_path / "resume.db"
    with Memory(SQLiteStore(path), embedder=embedder) as memory:
        memory.index(DOCS)
        before = memory.store.load_vectors("entity")
    store = SQLiteStore(path)
    texts = store.embed_texts()
    with pytest.raises(RuntimeError, match="encoder died"):
        reembed(store, Relabelled(embedder, "onnx-int8", fail_after=1), chunk=4)
    assert store.embedding_backend() == "onnx"
    assert np.array_equal(store.load_vectors("entity")[2], before[2])  # readers still see the old vectors
    result = reembed(store, Relabelled(embedder, "onnx-int8"), chunk=4)
    assert result.resumed == 4 and result.encoded == len(texts) - 4 and result.texts == len(texts)
    assert store.embedding_backend() == "onnx-int8"
    assert np.allclose(store.load_vectors("entity")[2], -before[2], atol=1e-6)
    store.close()


def test_the_swap_refuses_a_record_written_after_staging(tmp_path, embedder):
    path = tmp_path / "race.db"
    memory = Memory(SQLiteStore(path), embedder=embedder)
    memory.index(DOCS[:1])
    other = Relabelled(embedder, "onnx-int8")
    target = identity_of(other)
    texts = memory.store.embed_texts()
    memory.store.stage_vectors(target, dict(zip(texts, other.encode(list(texts.values())), strict=True)))
    memory.index(DOCS[1:])  # written while the re-embedding was under way
    with pytest.raises(Conflict, match="no staged vector"):
        memory.store.swap_staged_vectors(target)
    assert memory.store.embedding_backend() == "onnx"
    memory.close()
    store = SQLiteStore(path)
    result = reembed(store, other)  # encodes only what is new, then swaps
    assert result.resumed == len(texts) and result.encoded == len(store.embed_texts()) - len(texts)
    store.close()


def test_hippo_reembed_on_sqlite_as_a_subprocess(tmp_path, embedder):
    corpus, store = tmp_path / "corpus.json", tmp_path / "cli.db"
    corpus.write_text(json.dumps(DOCS), encoding="utf-8")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "200", "HIPPO_EMBEDDING_BACKEND": "onnx"}

    def hippo(*args: str, **extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "hippo.cli", *args, "--store", str(store)], capture_output=True,
                              text=True, env={**env, **extra}, timeout=300)

    assert hippo("index", str(corpus)).returncode == 0
    refused = hippo("recall", QUESTION, HIPPO_EMBEDDING_BACKEND="onnx-int8")
    assert refused.returncode == 2 and f"hippo reembed --store {store}" in refused.stderr
    done = hippo("reembed", "--json", HIPPO_EMBEDDING_BACKEND="onnx-int8")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert "onnx backend" in result["before"] and "onnx-int8/ffn-fp32 backend" in result["after"]
    assert result["encoded"] == result["texts"] > len(DOCS)
    again = hippo("reembed", HIPPO_EMBEDDING_BACKEND="onnx-int8")
    assert again.returncode == 0 and "nothing to do" in again.stdout
    bad = hippo("reembed", "--backend", "tensorflow")
    assert bad.returncode == 2 and "backend" in bad.stderr and "onnx-int8, onnx, torch" in bad.stderr
    recalled = hippo("recall", QUESTION, "--json", HIPPO_EMBEDDING_BACKEND="onnx-int8")
    assert recalled.returncode == 0, recalled.stderr
    assert "Lena Markov" in [h["title"] for h in json.loads(recalled.stdout)["hits"]]


@pytest.mark.neo4j
def test_reembed_on_neo4j_replaces_the_cache_and_the_vector_index_properties(neo4j_store, neo4j_server, embedder):
    import neo4j

    with Memory(neo4j_store(), embedder=embedder) as memory:
        memory.index(DOCS)
        counts = memory.stats()
    store = neo4j_store()
    with pytest.raises(EmbeddingBackendMismatch, match=r"hippo reembed --store (bolt|neo4j)://"):
        Memory(store, embedder=Relabelled(embedder, "onnx-int8"))
    other = Relabelled(embedder, "onnx-int8")
    result = reembed(store, other)
    assert result.encoded == result.texts == len(store.embed_texts())
    assert store.embedding_backend() == "onnx-int8"
    texts = store.embed_texts()
    ids, hashes, matrix = store.load_vectors("entity")
    assert np.allclose(matrix, other.encode([texts[h] for h in hashes]), atol=1e-6)
    with neo4j.GraphDatabase.driver(neo4j_server["uri"], auth=(neo4j_server["user"], neo4j_server["password"])) as d:
        rows, _, _ = d.execute_query("MATCH (p:Passage) MATCH (v:PassageVector {hash: p.embed_hash}) "
                                     "RETURN p.embed_hash AS h, v.embedding AS e")
        staged, _, _ = d.execute_query("MATCH (v:StagedVector) RETURN count(v) AS n")
        on_records, _, _ = d.execute_query("MATCH (p:Passage) WHERE p.embedding IS NOT NULL RETURN count(p) AS n")
    assert staged[0]["n"] == 0 and on_records[0]["n"] == 0
    assert len(rows) == counts.passages
    for row in rows:  # the vector index (over :PassageVector) reads the new vectors too
        assert np.allclose(row["e"], other.encode([texts[row["h"]]])[0], atol=1e-5)
    with Memory(store, embedder=other) as memory:
        assert memory.stats().passages == counts.passages
        assert memory.recall(QUESTION).hits
