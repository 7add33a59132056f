"""What the engine needs from every store. Each test runs against each store."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import closing

import numpy as np
import pytest

from hippo.errors import EmbeddingModelMismatch, StoreError
from hippo.ids import text_hash
from hippo.models import DocumentRecord, Entity, Fact, Mention, Passage, Synonym
from hippo.store import SQLiteStore, Store, WriteBatch, embed_hash, sqlite_embedding

DIM = 4
HALF_ROUNDING = 1e-3  # a unit vector's component moves by < 2.5e-4 when a SQLite store keeps it at float16


@pytest.fixture(params=["sqlite", pytest.param("neo4j", marks=pytest.mark.neo4j)])
def opener(request, tmp_path) -> Iterator[Callable[[], Store]]:
    """Opens another handle on the same, initially empty database (closed at teardown)."""
    if request.param == "neo4j":
        yield request.getfixturevalue("neo4j_store")
        return
    opened: list[Store] = []

    def open_sqlite() -> Store:
        opened.append(SQLiteStore(tmp_path / "contract.db"))
        return opened[-1]

    yield open_sqlite
    for handle in opened:
        handle.close()


@pytest.fixture
def store(opener) -> Store:
    opened = opener()
    opened.bind_embedding_model("test-model", DIM)
    return opened


def _vector(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=DIM).astype(np.float32)
    return v / np.linalg.norm(v)


def _as_kept(store: Store, vector: np.ndarray) -> np.ndarray:
    """The float32 a store gives back: Neo4j's exactly; a SQLite store made now keeps the nearest float16."""
    return vector.astype(np.float16 if isinstance(store, SQLiteStore) else np.float32).astype(np.float32)


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
        assert np.allclose(cached[h], v, atol=HALF_ROUNDING)
    ids, hashes, matrix = store.load_vectors("entity")
    assert set(ids) == {"entity:alpha", "entity:beta"} and matrix.shape == (2, DIM)
    assert matrix.dtype == np.float32
    for rid, h, row in zip(ids, hashes, matrix, strict=True):
        assert np.allclose(row, batch.vectors[h], atol=HALF_ROUNDING)
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


# -- more of what the engine relies on ----------------------------------------------


def _passage_batch(doc: str, texts: list[str], space: str = "org", title: str = "") -> WriteBatch:
    passages = [Passage(id=f"passage:{doc}:{i}", doc_id=doc, index=i, title=title, text=t, space=space)
                for i, t in enumerate(texts)]
    return WriteBatch(documents=[DocumentRecord(id=doc, title=title, space=space)], passages=passages,
                      vectors={embed_hash(p): _vector(100 + i) for i, p in enumerate(passages)})


def test_an_empty_store(store):
    assert store.revision() == 0
    assert store.counts() == dict.fromkeys(
        ("documents", "passages", "entities", "facts", "mentions", "synonyms"), 0)
    graph = store.load_graph()
    assert (graph.passages, graph.entities, graph.facts, graph.mentions, graph.synonyms) == ([],) * 5
    for kind in ("passage", "entity", "fact"):
        ids, hashes, matrix = store.load_vectors(kind)
        assert ids == [] and hashes == [] and matrix.shape == (0, DIM) and matrix.dtype == np.float32
    assert store.existing_ids([]) == set() and store.vectors([]) == {}
    assert store.keyword_search("alpha", 5) == []
    assert store.write(WriteBatch()) == 0  # an empty batch changes nothing


def test_reads_of_unknown_ids_are_empty_and_follow_the_requested_order(store):
    store.write(_batch())
    store.write(_batch(doc="doc:2", text="Gamma."))
    assert store.passages(["passage:nope"]) == [] and store.entities(["entity:nope"]) == []
    assert store.facts(["fact:nope"]) == []
    wanted = ["passage:doc:2", "passage:nope", "passage:doc:1", "passage:doc:2"]
    assert [p.id for p in store.passages(wanted)] == ["passage:doc:2", "passage:doc:1"]
    assert [e.id for e in store.entities(["entity:beta", "entity:alpha"])] == ["entity:beta", "entity:alpha"]
    [alpha] = store.entities(["entity:alpha"])
    assert (alpha.name, alpha.key, alpha.type) == ("Alpha", "alpha", "TITLE")
    assert [f.id for f in store.facts(["fact:doc:2", "fact:doc:1"])] == ["fact:doc:2", "fact:doc:1"]
    assert store.existing_ids(["doc:1", "nope"]) == set()  # documents are not records the engine looks up


def test_records_keep_store_order_across_batches(store):
    """Rows come back in the order records were first written, so the projection and the
    vector matrices line up the same way on every store."""
    store.write(_passage_batch("doc:b", ["Bravo one.", "Bravo two."]))
    store.write(_passage_batch("doc:a", ["Alfa one."]))
    store.write(_passage_batch("doc:b", ["Bravo one.", "Bravo two.", "Bravo three."]))
    order = ["passage:doc:b:0", "passage:doc:b:1", "passage:doc:a:0", "passage:doc:b:2"]
    assert [pid for pid, _ in store.load_graph().passages] == order
    ids, hashes, matrix = store.load_vectors("passage")
    assert ids == order
    texts = {p.id: p for p in store.passages(order)}
    assert hashes == [embed_hash(texts[i]) for i in order]
    cached = store.vectors(hashes)
    assert np.array_equal(matrix, np.stack([cached[h] for h in hashes]))


def test_vectors_come_back_as_float32_as_each_store_keeps_them(store):
    """Neo4j keeps float32 bytes, exactly; a SQLite store made now keeps float16 (the nearest one)."""
    batch = _batch()
    store.write(batch)
    for h, v in store.vectors(batch.vectors).items():
        assert v.dtype == np.float32 and np.array_equal(v, _as_kept(store, batch.vectors[h]))


def test_a_record_shares_the_cached_vector_of_its_text(store):
    """The cache is keyed by text: a second record with the same text needs no new vector."""
    store.write(_passage_batch("doc:1", ["Same words."]))
    twin = Passage(id="passage:twin", doc_id="doc:2", text="Same words.")
    store.write(WriteBatch(documents=[DocumentRecord(id="doc:2")], passages=[twin]))
    ids, hashes, matrix = store.load_vectors("passage")
    assert ids == ["passage:doc:1:0", "passage:twin"] and hashes[0] == hashes[1]
    assert np.array_equal(matrix[0], matrix[1])


def test_revision_moves_only_when_something_changed(store):
    assert store.write(_batch()) == 1
    assert store.write(WriteBatch(vectors={text_hash("new text"): _vector(9)})) == 2  # a new vector
    assert store.write(WriteBatch(vectors={text_hash("new text"): _vector(9)})) == 2
    doc = DocumentRecord(id="doc:1", title="Alpha", space="org")
    assert store.write(WriteBatch(documents=[doc])) == 2  # the same document again
    assert store.write(WriteBatch(documents=[doc.model_copy(update={"title": "Alpha II"})])) == 3
    synonym = Synonym(a="entity:alpha", b="entity:beta", score=0.85)
    assert store.write(WriteBatch(synonyms=[synonym])) == 3
    assert store.write(WriteBatch(synonyms=[synonym.model_copy(update={"score": 0.9})])) == 4
    assert store.load_graph().synonyms == [("entity:alpha", "entity:beta", pytest.approx(0.9))]
    assert store.revision() == 4 and store.counts()["synonyms"] == 1


def test_the_last_write_keeps_its_id_with_the_revision_it_made(store, opener):
    assert store.last_write() == (0, None)
    batch = _batch()
    batch.write_id = "w1"
    assert store.write(batch) == 1
    again = _batch()
    again.write_id = "w2"
    assert store.write(again) == 1  # nothing changed: the revision and its write stay
    assert opener().last_write() == (1, "w1")  # another handle reads both together
    assert store.write(WriteBatch(vectors={text_hash("new text"): _vector(9)})) == 2
    assert store.last_write() == (2, None)  # a write without an id is nobody's


def test_stored_passages_are_never_overwritten(store):
    store.write(_batch())
    changed = _batch(text="Alpha was built by Beta.")
    changed.passages[0] = changed.passages[0].model_copy(update={"title": "Other", "space": "user:x"})
    store.write(changed)
    [passage] = store.passages(["passage:doc:1"])
    assert (passage.title, passage.space) == ("Alpha", "org")


@pytest.mark.parametrize("breakage", ["mention", "synonym", "passage"])
def test_every_dangling_reference_fails_the_whole_batch(store, breakage):
    store.write(_batch())
    before = (store.revision(), store.counts(), store.load_graph())
    bad = _batch(doc="doc:2", text="Gamma.")
    if breakage == "mention":
        bad.mentions.append(Mention(passage_id="passage:doc:2", entity_id="entity:ghost"))
    elif breakage == "synonym":
        bad.synonyms.append(Synonym(a="entity:alpha", b="entity:ghost", score=0.9))
    else:  # a passage of a document nobody wrote
        bad.passages.append(Passage(id="passage:orphan", doc_id="doc:ghost", text="Orphan."))
    with pytest.raises(Exception):
        store.write(bad)
    assert (store.revision(), store.counts(), store.load_graph()) == before
    assert store.passages(["passage:doc:2", "passage:orphan"]) == []
    assert store.vectors(bad.vectors).keys() == _batch().vectors.keys() & bad.vectors.keys()


def test_the_graph_holds_only_entities_live_passages_mention(store):
    batch = _batch()
    lonely = Entity(id="entity:lonely", name="Lonely", key="lonely")
    batch.entities.append(lonely)
    batch.synonyms.append(Synonym(a="entity:beta", b="entity:lonely", score=0.95))
    store.write(batch)
    graph = store.load_graph()
    assert "entity:lonely" not in graph.entities
    assert graph.synonyms == [("entity:alpha", "entity:beta", pytest.approx(0.85))]
    assert store.counts()["entities"] == 3 and store.counts()["synonyms"] == 2
    assert "entity:lonely" in store.existing_ids(["entity:lonely"])


def test_keyword_search_details(store):
    store.write(_passage_batch("doc:a", ["Südhof built the tide-clock in Caldry.", "The ferry reaches Caldry."],
                               title="Tide-clock"))
    store.write(_passage_batch("doc:b", ["Caldry is a town; Caldry has a harbour; Caldry again."],
                               space="user:ann"))
    store.write(_passage_batch("doc:c", ["Nothing of note."], space="session:1"))
    hits = store.keyword_search("caldry", 10)
    assert {pid for pid, _ in hits} == {"passage:doc:a:0", "passage:doc:a:1", "passage:doc:b:0"}
    scores = [score for _, score in hits]
    assert scores == sorted(scores, reverse=True) and all(s > 0 for s in scores)
    assert hits[0][0] == "passage:doc:b:0"  # three mentions beat one
    assert len(store.keyword_search("caldry", 2)) == 2
    assert store.keyword_search("caldry", 0) == []
    both = store.keyword_search("caldry", 10, frozenset({"org", "session:1"}))
    assert {pid for pid, _ in both} == {"passage:doc:a:0", "passage:doc:a:1"}
    assert store.keyword_search("caldry", 10, frozenset()) == []
    assert [p for p, _ in store.keyword_search("SUDHOF", 10)] == ["passage:doc:a:0"]  # case and diacritics
    assert store.keyword_search("tide", 10)[0][0].startswith("passage:doc:a:")  # the title is searched
    for text in ('title:caldry', 'caldry~', 'cal*', '(caldry', 'caldry AND', 'NOT', '\\', '"', 'OR OR'):
        store.keyword_search(text, 5)  # never a syntax error
    assert [p for p, _ in store.keyword_search("NOT harbour", 5)] == ["passage:doc:b:0"]
    assert store.keyword_search("!?* -- ::", 5) == []


def test_non_ascii_text_and_document_fields_round_trip(store):
    doc = DocumentRecord(id="doc:jp", title="青波島", source="https://example.org/ø", space="user:ø",
                         meta={"lang": "ja", "n": 2})
    passage = Passage(id="passage:jp", doc_id=doc.id, index=3, title="青波島", text="潮鳴丸は青波島に着いた。Ø!",
                      space="user:ø", version=2)
    store.write(WriteBatch(documents=[doc], passages=[passage], vectors={embed_hash(passage): _vector(1)}))
    [back] = store.passages(["passage:jp"])
    assert back.created_at is not None
    assert back.model_copy(update={"created_at": None}) == passage
    assert store.documents(["doc:jp", "doc:none"]) == [doc]
    assert store.write(WriteBatch(documents=[doc])) == 1  # the same document (meta and all) is no change


def test_batches_larger_than_one_statement(store, monkeypatch):
    n = 1_234
    passages = [Passage(id=f"passage:{i}", doc_id="doc:big", index=i, text=f"text {i}") for i in range(n)]
    entities = [Entity(id=f"entity:{i}", name=f"E{i}", key=f"e{i}") for i in range(n)]
    batch = WriteBatch(
        documents=[DocumentRecord(id="doc:big")], passages=passages, entities=entities,
        facts=[Fact(id=f"fact:{i}", subject_id=f"entity:{i}", predicate="next", object_id=f"entity:{(i + 1) % n}",
                    passage_id=f"passage:{i}", subject=f"E{i}", object=f"E{(i + 1) % n}") for i in range(n)],
        mentions=[Mention(passage_id=f"passage:{i}", entity_id=f"entity:{i}") for i in range(n)],
        vectors={embed_hash(r): _vector(i) for i, r in enumerate([*passages, *entities])},
    )
    assert store.write(batch) == 1
    assert store.counts() == {"documents": 1, "passages": n, "entities": n, "facts": n, "mentions": n,
                              "synonyms": 0}
    ids, _, matrix = store.load_vectors("entity")
    assert ids == [e.id for e in entities]
    want = np.stack([_vector(n), _vector(n + 617), _vector(2 * n - 1)])
    assert np.array_equal(matrix[[0, 617, n - 1]], _as_kept(store, want))
    monkeypatch.setattr(sqlite_embedding, "_VECTOR_BATCH", 100)  # SQLite reads the vectors in 13 batches
    again_ids, _, again = store.load_vectors("entity")
    assert again_ids == ids and np.array_equal(again, matrix)
    assert store.load_vectors("fact")[0] == []  # no fact vector was given
    assert len(store.existing_ids([*(p.id for p in passages), *(f"fact:{i}" for i in range(n))])) == 2 * n
    assert store.write(batch) == 1


def test_another_handle_sees_writes_and_the_bound_model(store, opener):
    other = opener()
    assert other.embedding_model() == ("test-model", DIM)
    assert other.revision() == 0
    store.write(_batch())
    assert other.revision() == 1 and other.counts()["passages"] == 1
    assert other.write(_batch(doc="doc:2", text="Gamma.")) == 2
    assert store.revision() == 2 and [p.id for p in store.passages(["passage:doc:2"])] == ["passage:doc:2"]
    with pytest.raises(EmbeddingModelMismatch):
        other.bind_embedding_model("test-model", DIM + 1)


# -- lifecycle: tombstones, versions, the key-value area ----------------------------


def test_retire_and_revive_passages_leave_and_rejoin_every_read(store):
    store.write(_batch())
    revision = store.write(WriteBatch(retire=["passage:doc:1"], retire_reason="forgotten"))
    assert revision == 2
    [passage] = store.passages(["passage:doc:1"])  # tombstoned, not deleted
    assert passage.forgotten_at is not None and passage.forgotten_reason == "forgotten"
    graph = store.load_graph()
    assert graph.passages == [] and graph.entities == [] and graph.facts == [] and graph.texts == {}
    assert store.load_vectors("passage")[0] == [] and store.load_vectors("fact")[0] == []
    assert store.keyword_search("alpha", 5) == []
    assert store.counts()["passages"] == 0
    assert store.write(WriteBatch(retire=["passage:doc:1"])) == 2  # retiring twice changes nothing

    assert store.write(WriteBatch(revive=["passage:doc:1"])) == 3
    [passage] = store.passages(["passage:doc:1"])
    assert passage.forgotten_at is None and passage.forgotten_reason is None
    graph = store.load_graph()
    assert graph.passages == [("passage:doc:1", "org")]
    assert graph.texts == {"passage:doc:1": "Alpha\nAlpha was built by Beta."}
    assert [p for p, _ in store.keyword_search("alpha", 5)] == ["passage:doc:1"]


def test_documents_versions_and_their_passages(store):
    store.write(_passage_batch("doc:v", ["First version."]))
    [doc] = store.documents(["doc:v"])
    assert doc.version == 1 and doc.kind == "document" and doc.forgotten_at is None
    v2 = Passage(id="passage:doc:v@2", doc_id="doc:v", text="Second version.", version=2)
    store.write(WriteBatch(documents=[doc.model_copy(update={"version": 2})], passages=[v2],
                           retire=["passage:doc:v:0"], retire_reason="superseded",
                           vectors={embed_hash(v2): _vector(9)}, expect_versions={"doc:v": 1}))
    history = store.document_passages(["doc:v"])
    assert [(p.version, p.text, p.forgotten_reason) for p in history] == [
        (1, "First version.", "superseded"), (2, "Second version.", None)]
    assert store.documents(["doc:v"])[0].version == 2
    assert store.document_passages(["doc:none"]) == []


def test_a_stale_expected_version_is_a_conflict_and_writes_nothing(store):
    from hippo.errors import Conflict

    store.write(_passage_batch("doc:c", ["One."]))
    revision, counts = store.revision(), store.counts()
    stale = _passage_batch("doc:c", ["Two."])
    stale.expect_versions = {"doc:c": 0}  # the writer believed the document absent
    with pytest.raises(Conflict, match="doc:c"):
        store.write(stale)
    assert store.revision() == revision and store.counts() == counts
    fresh = _passage_batch("doc:new", ["Three."])
    fresh.expect_versions = {"doc:new": 0}
    assert store.write(fresh) == revision + 1


def test_find_documents_by_space_kind_and_tombstone(store):
    from datetime import UTC, datetime

    store.write(_passage_batch("doc:a", ["A."], space="user:ann"))
    memory = DocumentRecord(id="memory:1", space="user:ann", kind="memory", meta={"label": "likes tea"})
    note = Passage(id="passage:m1", doc_id="memory:1", text="Ann likes tea.", space="user:ann")
    store.write(WriteBatch(documents=[memory], passages=[note], vectors={embed_hash(note): _vector(3)}))
    store.write(_passage_batch("doc:b", ["B."], space="org"))
    assert [d.id for d in store.find_documents(spaces=frozenset({"user:ann"}))] == ["memory:1", "doc:a"]
    assert [d.id for d in store.find_documents(kind="memory")] == ["memory:1"]
    assert [d.id for d in store.find_documents(limit=1)] == ["doc:b"]
    gone = memory.model_copy(update={"forgotten_at": datetime.now(UTC), "forgotten_reason": "asked"})
    store.write(WriteBatch(documents=[gone], retire=["passage:m1"]))
    assert [d.id for d in store.find_documents(kind="memory")] == []
    [back] = store.find_documents(kind="memory", live=False)
    assert back.forgotten_reason == "asked" and back.forgotten_at is not None and back.meta == {"label": "likes tea"}
    restored = back.model_copy(update={"forgotten_at": None, "forgotten_reason": None})
    store.write(WriteBatch(documents=[restored], revive=["passage:m1"]))
    assert store.documents(["memory:1"])[0].forgotten_at is None


def test_a_vector_that_arrives_late_joins_the_vector_reads(store):
    batch = _batch()
    late = batch.vectors.pop(embed_hash(batch.passages[0]))
    store.write(batch)
    assert store.load_vectors("passage")[0] == []
    revision = store.write(WriteBatch(passages=batch.passages, vectors={embed_hash(batch.passages[0]): late}))
    assert revision == 2
    ids, _, matrix = store.load_vectors("passage")
    assert ids == ["passage:doc:1"] and np.array_equal(matrix[0], _as_kept(store, late))


def test_the_key_value_area(store):
    assert store.get_values("settings", ["a"]) == {}
    revision = store.revision()
    store.put_values("settings", {"a": "1", "b": "ünï\x00code"})
    store.put_values("other", {"a": "elsewhere"})
    assert store.get_values("settings", ["a", "b", "c"]) == {"a": "1", "b": "ünï\x00code"}
    store.put_values("settings", {"a": None, "b": "2"})
    assert store.get_values("settings", ["a", "b"]) == {"b": "2"}
    assert store.get_values("other", ["a"]) == {"a": "elsewhere"}
    store.put_values("settings", {"c": "3", "a\x00b": "nul"})
    store.put_values("settings2", {"z": "another namespace"})
    assert store.list_values("settings") == {"a\x00b": "nul", "b": "2", "c": "3"}
    assert list(store.list_values("settings", limit=2)) == ["a\x00b", "b"]
    assert store.list_values("nothing-here") == {}
    assert store.revision() == revision  # not graph data: the derived indexes stay valid


# -- SQLite only: how vectors are kept ---------------------------------------------------------------------------


def _stored_blobs(path) -> list[bytes]:
    import sqlite3

    with closing(sqlite3.connect(path)) as db:
        return [row[0] for row in db.execute("SELECT vector FROM vectors")]


def test_a_sqlite_store_made_now_keeps_vectors_at_float16_half_the_bytes(tmp_path):
    import sqlite3

    path = tmp_path / "half.db"
    with closing(SQLiteStore(path)) as store:
        store.bind_embedding_model("test-model", DIM)
        batch = _batch()
        store.write(batch)
        _, hashes, matrix = store.load_vectors("entity")
        assert np.array_equal(matrix, np.stack([_as_kept(store, batch.vectors[h]) for h in hashes]))
    blobs = _stored_blobs(path)
    assert len(blobs) == len(batch.vectors) and {len(b) for b in blobs} == {2 * DIM}
    with closing(sqlite3.connect(path)) as db:  # 8 KB pages: nine 384-d float16 vector rows a page, not four
        assert db.execute("PRAGMA page_size").fetchone() == (8192,)
    with closing(SQLiteStore(path)) as again:  # the format is the store's, not the opener's
        assert {h: v.tolist() for h, v in again.vectors(batch.vectors).items()} == \
            {h: _as_kept(again, v).tolist() for h, v in batch.vectors.items()}


def test_a_sqlite_store_made_before_float16_keeps_float32_for_old_and_new_vectors(tmp_path):
    import sqlite3

    path = tmp_path / "older.db"
    with closing(SQLiteStore(path)) as store:
        store.bind_embedding_model("test-model", DIM)
    with closing(sqlite3.connect(path)) as db, db:  # as hippo 0.2 left it: no vector_format in meta
        db.execute("DELETE FROM meta WHERE key = ?", (sqlite_embedding.FORMAT_KEY,))
    with closing(SQLiteStore(path)) as store:
        batch = _batch()
        store.write(batch)
        for h, v in store.vectors(batch.vectors).items():
            assert np.array_equal(v, batch.vectors[h])  # exact, as before
    assert {len(b) for b in _stored_blobs(path)} == {4 * DIM}


@pytest.mark.parametrize("bad", [7e4, -1e5, float("nan")])
def test_a_vector_float16_cannot_hold_is_refused_and_nothing_is_written(tmp_path, bad):
    with closing(SQLiteStore(tmp_path / "range.db")) as store:
        store.bind_embedding_model("test-model", DIM)
        store.write(_batch(doc="doc:0", text="Kept before."))
        before = store.counts(), store.revision()
        batch = _batch()
        batch.vectors[embed_hash(batch.passages[0])] = np.array([bad, 0, 0, 0], dtype=np.float32)
        with pytest.raises(StoreError, match=r"outside float16's range \(\|x\| <= 65504\)"):
            store.write(batch)
        assert (store.counts(), store.revision()) == before
        assert store.existing_ids(["passage:doc:1"]) == set()
