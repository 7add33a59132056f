"""What the engine needs from every store. Each test runs against each store."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from hippo.errors import EmbeddingModelMismatch
from hippo.ids import text_hash
from hippo.models import DocumentRecord, Entity, Fact, Mention, Passage, Synonym
from hippo.store import SQLiteStore, Store, WriteBatch, embed_hash

DIM = 4


@pytest.fixture(params=["sqlite"])
def store(request, tmp_path) -> Iterator[Store]:
    opened = SQLiteStore(tmp_path / "contract.db")
    opened.bind_embedding_model("test-model", DIM)
    yield opened
    opened.close()


def _vector(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=DIM).astype(np.float32)
    return v / np.linalg.norm(v)


def _batch(space: str = "org", doc: str = "doc:1", text: str = "Alpha was built by Beta.") -> WriteBatch:
    passage = Passage(id=f"passage:{doc}", doc_id=doc, title="Alpha", text=text, space=space)
    alpha = Entity(id="entity:alpha", name="Alpha", key="alpha", type="TITLE")
    beta = Entity(id="entity:beta", name="Beta", key="beta")
    fact = Fact(id=f"fact:{doc}", subject_id=alpha.id, predicate="built by", object_id=beta.id,
                passage_id=passage.id, subject="Alpha", object="Beta")
    records = [passage, alpha, beta, fact]
    return WriteBatch(
        documents=[DocumentRecord(id=doc, title="Alpha", space=space)],
        passages=[passage], entities=[alpha, beta], facts=[fact],
        mentions=[Mention(passage_id=passage.id, entity_id=alpha.id),
                  Mention(passage_id=passage.id, entity_id=beta.id)],
        synonyms=[Synonym(a=alpha.id, b=beta.id, score=0.85)],
        vectors={embed_hash(r): _vector(i) for i, r in enumerate(records)},
    )


def test_write_then_read_back_every_record(store):
    revision = store.write(_batch())
    assert revision == 1 == store.revision()
    [passage] = store.passages(["passage:doc:1"])
    assert passage.text == "Alpha was built by Beta." and passage.space == "org" and passage.title == "Alpha"
    assert {e.name for e in store.entities(["entity:alpha", "entity:beta"])} == {"Alpha", "Beta"}
    [fact] = store.facts(["fact:doc:1"])
    assert fact.text == "Alpha built by Beta"
    assert store.existing_ids(["passage:doc:1", "entity:alpha", "fact:doc:1", "nope"]) == {
        "passage:doc:1", "entity:alpha", "fact:doc:1"}
    assert store.counts() == {"documents": 1, "passages": 1, "entities": 2, "facts": 1, "mentions": 2,
                              "synonyms": 1}


def test_graph_rows_for_the_projection(store):
    store.write(_batch())
    graph = store.load_graph()
    assert graph.passages == [("passage:doc:1", "org")]
    assert set(graph.entities) == {"entity:alpha", "entity:beta"}
    assert graph.facts == [("fact:doc:1", "entity:alpha", "entity:beta", "passage:doc:1")]
    assert set(graph.mentions) == {("passage:doc:1", "entity:alpha"), ("passage:doc:1", "entity:beta")}
    assert graph.synonyms == [("entity:alpha", "entity:beta", pytest.approx(0.85))]


def test_vectors_round_trip_by_text_hash_and_by_kind(store):
    batch = _batch()
    store.write(batch)
    cached = store.vectors([*batch.vectors, text_hash("never stored")])
    assert set(cached) == set(batch.vectors)
    for h, v in batch.vectors.items():
        assert np.allclose(cached[h], v)
    ids, hashes, matrix = store.load_vectors("entity")
    assert set(ids) == {"entity:alpha", "entity:beta"} and matrix.shape == (2, DIM)
    assert matrix.dtype == np.float32
    for rid, h, row in zip(ids, hashes, matrix, strict=True):
        assert np.allclose(row, batch.vectors[h])
    assert store.load_vectors("passage")[0] == ["passage:doc:1"]
    assert store.load_vectors("fact")[0] == ["fact:doc:1"]


def test_rewriting_the_same_batch_is_a_no_op(store):
    store.write(_batch())
    before = (store.revision(), store.counts())
    assert store.write(_batch()) == before[0]
    assert (store.revision(), store.counts()) == before


def test_a_failing_batch_leaves_nothing_behind(store):
    store.write(_batch())
    before = (store.revision(), store.counts())
    bad = _batch(doc="doc:2", text="Gamma.")
    # A fact that points at an entity nobody wrote breaks referential integrity.
    bad.facts.append(Fact(id="fact:broken", subject_id="entity:ghost", predicate="p", object_id="entity:beta",
                          passage_id="passage:doc:2", subject="ghost", object="Beta"))
    with pytest.raises(Exception):
        store.write(bad)
    assert (store.revision(), store.counts()) == before
    assert store.passages(["passage:doc:2"]) == []


def test_keyword_search_ranks_by_bm25_and_filters_spaces(store):
    store.write(_batch())
    store.write(_batch(space="user:ann", doc="doc:2", text="Gamma orbits Delta; Gamma is bright."))
    assert [pid for pid, _ in store.keyword_search("gamma", 5)] == ["passage:doc:2"]
    assert store.keyword_search("gamma", 5, frozenset({"org"})) == []
    assert [pid for pid, _ in store.keyword_search("built Beta", 5, frozenset({"org"}))] == ["passage:doc:1"]
    assert store.keyword_search('"unbalanced AND (', 5) == []  # user text is never query syntax
    assert store.keyword_search("", 5) == []


def test_embedding_model_is_bound_once(store):
    assert store.embedding_model() == ("test-model", DIM)
    store.bind_embedding_model("test-model", DIM)  # the same model again is fine
    with pytest.raises(EmbeddingModelMismatch, match="test-model"):
        store.bind_embedding_model("other-model", 8)
