"""The engine end to end on the embedded store, with the real models."""

from __future__ import annotations

import numpy as np
import pytest

from hippo import EmbeddingModelError, EmbeddingModelMismatch, InvalidInput, Memory, Settings
from hippo.embed import SentenceEmbedder
from hippo.store import SQLiteStore


def _titles(hits) -> list[str]:
    return [h.title for h in hits]


def test_recall_finds_a_two_hop_answer_through_the_graph(sample_memory):
    result = sample_memory.recall(
        "In which year was the company co-founded by the inventor of the tide-clock dissolved?", k=5)
    assert result.strategy == "graph"
    assert {"Tide-clock", "Südhof & Lind Horology"} <= set(_titles(result.hits))
    assert result.clues and all(c.seed_ids or c.query for c in result.clues)
    entity_ids = {s.id for s in result.seeds}
    assert all(sid in entity_ids for c in result.clues for sid in c.seed_ids)
    assert any(h.provenance.nodes for h in result.hits), "graph hits say which seeds led to them"
    assert [h.score for h in result.hits] == sorted((h.score for h in result.hits), reverse=True)


def test_caps_on_clues_hits_and_tokens(sample_memory):
    question = "Who governs the island on which the painter Greta Südhof was born?"
    assert len(sample_memory.recall(question, n=2).clues) <= 2
    assert len(sample_memory.recall(question, k=3).hits) == 3
    budgeted = sample_memory.recall(question, k=10, token_budget=200)
    assert 0 < len(budgeted.hits) < 10
    assert sum((len(h.text) + 3) // 4 for h in budgeted.hits) <= 200


def test_retrieve_baselines(sample_memory):
    for mode in ("dense", "bm25", "hybrid"):
        hits = sample_memory.retrieve("tide-clock inventor", k=3, mode=mode)
        assert len(hits) == 3 and "Tide-clock" in _titles(hits), mode
    assert sample_memory.retrieve("tide-clock", k=2, mode="bm25")[0].scores["sparse"] > 0


def test_reindexing_changes_nothing(open_memory, sample_corpus):
    memory = open_memory()
    first = memory.index(sample_corpus)
    stats, graph = memory.stats(), memory.graph_stats()
    again = memory.index(sample_corpus)
    assert again.passages_added == again.entities_added == again.facts_added == again.vectors_encoded == 0
    assert again.passages_unchanged == first.passages_added
    assert again.revision == first.revision
    assert memory.stats() == stats and memory.graph_stats() == graph


def test_empty_memory_falls_back_to_the_query(open_memory):
    result = open_memory().recall("Who founded the Veskari Shipping Company?")
    assert result.strategy == "empty" and result.hits == []
    assert [c.query for c in result.clues] == ["Who founded the Veskari Shipping Company?"]
    assert "no passage" in result.note


def test_query_without_known_entities_still_answers(sample_memory):
    result = sample_memory.recall("zxqv wpmf?")
    assert result.hits, "falls back to dense retrieval instead of returning nothing"
    if result.strategy == "dense":
        assert result.note and result.clues[0].query == "zxqv wpmf?"


@pytest.mark.parametrize("query", ["", "   ", "x" * 5000])
def test_bad_queries_name_the_field(sample_memory, query):
    with pytest.raises(InvalidInput, match="^query: "):
        sample_memory.recall(query)


@pytest.mark.parametrize(("name", "value"), [("n", 0), ("k", -1), ("k", 10_001), ("token_budget", 0)])
def test_bad_caps_name_the_field(sample_memory, name, value):
    with pytest.raises(InvalidInput, match=f"^{name}: "):
        sample_memory.recall("tide-clock", **{name: value})


def _snapshot(memory: Memory):
    return memory.stats(), memory.graph_stats()


@pytest.mark.parametrize(("document", "field"), [
    ({"title": "Big", "text": "word " * 300}, "documents[1].text"),
    ({"title": "Bad", "text": "broken \udcff surrogate"}, "documents[1].text"),
    ({"title": "Empty", "text": "   "}, "documents[1].text"),
    ({"title": 5, "text": "title is not a string"}, "documents[1].title"),
    ({"text": None}, "documents[1].text"),
])
def test_bad_documents_are_refused_and_nothing_is_written(open_memory, document, field):
    memory = open_memory(max_document_chars=1000)
    memory.index([{"title": "Seed", "text": "Alpha was built by Beta."}])
    before = _snapshot(memory)
    good = {"title": "Good", "text": "Gamma orbits Delta."}
    with pytest.raises(InvalidInput) as error:
        memory.index([good, document])
    assert error.value.field == field
    assert _snapshot(memory) == before


def test_a_failing_extractor_leaves_the_store_unchanged(open_memory):
    class Broken:
        name = "broken"

        def extract(self, passages):
            raise RuntimeError("extractor crashed")

    memory = open_memory()
    memory.index([{"title": "Seed", "text": "Alpha was built by Beta."}])
    before = _snapshot(memory)
    with pytest.raises(RuntimeError):
        memory.index([{"title": "New", "text": "Gamma orbits Delta."}], extractor=Broken())
    assert _snapshot(memory) == before


def test_unknown_embedding_model_is_a_clear_error(tmp_path):
    with pytest.raises(EmbeddingModelError, match="never downloads"):
        Memory.open(str(tmp_path / "m.db"), settings=__import__("hippo").Settings(
            embedding_model="no-such-org/no-such-model"))


def test_a_store_refuses_vectors_of_another_model(open_memory, tmp_path, embedder):
    class Other:
        name, dim = "other-model", 384

        def encode(self, texts):
            return np.zeros((len(texts), 384), dtype=np.float32)

    path = tmp_path / "bound.db"
    memory = Memory(SQLiteStore(path), embedder=embedder)
    memory.index([{"title": "Seed", "text": "Alpha was built by Beta."}])
    before = memory.stats()
    memory.close()
    with pytest.raises(EmbeddingModelMismatch, match="all-MiniLM-L6-v2"):
        Memory(SQLiteStore(path), embedder=Other())
    with Memory(SQLiteStore(path), embedder=embedder) as reopened:
        assert reopened.stats() == before


def test_unicode_entity_names_survive(open_memory):
    memory = open_memory()
    memory.index([
        {"title": "Thomas Südhof", "text": "Thomas Südhof was born in Göttingen. He studied at the University of Göttingen."},
        {"title": "東京都", "text": "東京都 is the capital of Japan. 東京都 hosted the 1964 Olympics."},
        {"title": "大阪府", "text": "大阪府 is a prefecture in the Kansai region of Japan."},
    ])
    names = {e.name for e in memory.store.entities(
        [i for i in memory.engine.state.projection.record_ids if i.startswith("entity:")])}
    assert {"Thomas Südhof", "東京都", "大阪府", "Göttingen"} <= names
    result = memory.recall("Where was Thomas Südhof born?")
    assert any(s.name == "Thomas Südhof" for s in result.seeds)


def test_spaces_limit_what_a_reader_sees(open_memory):
    memory = open_memory()
    memory.index([{"title": "Public", "text": "The Aurora Bridge was designed by Lena Markov."}])
    memory.index([{"title": "Private", "text": "Lena Markov keeps a diary about the Aurora Bridge."}],
                 space="user:lena")
    everyone = memory.recall("Who designed the Aurora Bridge?")
    assert {"Public", "Private"} <= set(_titles(everyone.hits))
    org_only = memory.recall("Who designed the Aurora Bridge?", spaces=["org"])
    assert _titles(org_only.hits) == ["Public"]
    assert all(h.space == "org" for h in memory.retrieve("diary", k=5, mode="hybrid", spaces=["org"]))


def test_a_second_process_sees_writes_through_the_revision(tmp_path, embedder):
    path = tmp_path / "shared.db"
    writer = Memory(SQLiteStore(path), embedder=embedder)
    reader = Memory(SQLiteStore(path), embedder=embedder)
    try:
        assert reader.recall("Who designed the Aurora Bridge?").strategy == "empty"
        writer.index([{"title": "Aurora Bridge", "text": "The Aurora Bridge was designed by Lena Markov."}])
        assert _titles(reader.recall("Who designed the Aurora Bridge?").hits) == ["Aurora Bridge"]
    finally:
        writer.close()
        reader.close()


def test_the_embedder_is_deterministic(embedder: SentenceEmbedder):
    a, b = embedder.encode(["Göttingen"]), embedder.encode(["Göttingen"])
    assert np.allclose(a, b) and np.linalg.norm(a) == pytest.approx(1.0, abs=1e-5)


def test_large_calls_are_written_in_whole_batches(open_memory, sample_corpus):
    batched = open_memory(index_batch_documents=10)
    seen: list[tuple[str, int, int]] = []
    result = batched.index(sample_corpus, progress=lambda stage, done, total: seen.append((stage, done, total)))
    single = open_memory()
    whole = single.index(sample_corpus)
    assert batched.graph_stats() == single.graph_stats()
    assert result.passages_added == whole.passages_added == 54
    assert result.entities_added == whole.entities_added and result.facts_added == whole.facts_added
    assert result.revision == 6 and whole.revision == 1  # one revision per committed batch
    assert ("extract", 54, 54) in seen and ("embed", 6, 6) in seen


def test_the_top_m_prior_with_its_tail_ranks_like_the_full_prior(sample_memory):
    """A reset with the passage prior on the top M passages only, plus the direct term of the rest
    (``prior_tail``), stays close to the full prior on every passage; without the tail it drifts."""
    questions = ["Who governs the island on which the painter Greta Südhof was born?",
                 "Which shipyard built SS Gannet's Pride?", "Who founded the Skjelvik Cable Company?",
                 "What festival is held on the island where the kelp press was invented?",
                 "Where did the Great Storm of 1907 strike?"]

    def top10(**settings: object) -> dict[str, set[str]]:
        memory = Memory(sample_memory.store, settings=Settings(ppr_solver="exact", **settings),
                        embedder=sample_memory.embedder)
        return {q: {h.id for h in memory.recall(q, k=10).hits} for q in questions}

    full = top10(passage_prior_top=0)
    with_tail = top10(passage_prior_top=3, prior_tail=True)
    without = top10(passage_prior_top=3, prior_tail=False)
    shared = {name: sum(len(full[q] & got[q]) for q in questions) for name, got in
              (("tail", with_tail), ("no tail", without))}
    assert shared["tail"] > shared["no tail"]
    assert shared["tail"] >= 0.85 * 10 * len(questions)


def test_a_recall_on_two_threads_answers_as_one_on_its_own(sample_memory, monkeypatch):
    """``recall_threads`` runs the fact and entity searches on threads while BM25 and the passage
    search run on the recall's own thread, and describes the seeds while it walks: the same hits,
    scores, clues and seeds, to the bit, whichever PPR solver walks."""
    import threading

    from hippo.memory.source import LocalSource

    monkeypatch.setattr("hippo.memory.source.THREADS_FROM", 1)  # the sample is below where threads pay
    searched_on: set[tuple[str, str]] = set()  # (family, thread)
    nearest = LocalSource._nearest  # noqa: SLF001 - to see which thread searches

    def watched(self, family, *args):  # noqa: ANN001, ANN202
        searched_on.add((family, threading.current_thread().name))
        return nearest(self, family, *args)

    monkeypatch.setattr(LocalSource, "_nearest", watched)
    questions = ["Who governs the island on which the painter Greta Südhof was born?",
                 "Which shipyard built SS Gannet's Pride?", "Who founded the Skjelvik Cable Company?",
                 "What festival is held on the island where the kelp press was invented?"]

    def recalls(**settings: object) -> list:
        memory = Memory(sample_memory.store, settings=Settings(**settings), embedder=sample_memory.embedder)
        return [memory.recall(q, k=10) for q in questions]

    for solver in ("exact", "push"):
        alone = recalls(ppr_solver=solver, recall_threads=1)
        assert {thread for _, thread in searched_on} == {threading.current_thread().name}
        searched_on.clear()
        for one, two in zip(alone, recalls(ppr_solver=solver, recall_threads=2), strict=True):
            assert [(h.id, h.score) for h in one.hits] == [(h.id, h.score) for h in two.hits]
            assert one.clues == two.clues and one.seeds == two.seeds
        assert {family for family, _ in searched_on} == {"passages", "facts"}
        assert all(thread.startswith("hippo-read-ahead") == (family == "facts") for family, thread in searched_on)
        searched_on.clear()


def test_searches_started_ahead_and_never_asked_for_end_with_the_read(sample_memory, monkeypatch):
    """A recall that stops before taking what it started (an error, an early answer) must not leave
    a search running past its read section, where a write could change the index under it."""
    monkeypatch.setattr("hippo.memory.source.THREADS_FROM", 1)
    engine = Memory(sample_memory.store, settings=Settings(recall_threads=2), embedder=sample_memory.embedder).engine
    q = sample_memory.embedder.encode(["kelp press"])
    with engine.source(None) as source:
        source.search_ahead("facts", q[0], 5)
        source.search_ahead("entities", q, 3)
        source.search_ahead("passages", q[0], 5)  # run when taken, on the recall's thread
        started = list(source.ahead._started.values())  # noqa: SLF001 - what the read section must outlive
        assert len(started) == 2
    assert all(f.done() for f in started) and len(source.ahead) == 0
    with engine.source(None) as source:  # a started search is the answer asked for later
        source.search_ahead("facts", q[0], 5)
        ahead = source.nearest_facts(q[0], 5)
        assert len(source.ahead) == 0
        now = source.nearest_facts(q[0], 5)
    assert np.array_equal(ahead.handles, now.handles) and np.array_equal(ahead.scores, now.scores)
