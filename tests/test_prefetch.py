"""Encoding beside extraction (``hippo.memory.prefetch``): the same store as encoding after it, each
text encoded once, and a failure on either side leaves the store as it was and no thread behind."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from hippo import Memory
from hippo.memory import indexing
from hippo.store import SQLiteStore
from tests.counting import CountingEmbedder

QUESTIONS = ["Who founded the company that makes the iPhone?", "Where was Thomas Südhof born?"]


def _prefetch_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("hippo-prefetch")]


def _build(path, embedder, corpus, chunk, monkeypatch):
    monkeypatch.setattr(indexing, "EXTRACT_CHUNK", chunk)
    counting = CountingEmbedder(embedder)
    memory = Memory(SQLiteStore(path), embedder=counting)
    return memory, counting, memory.index(corpus)


def test_prefetching_builds_the_store_that_encoding_after_extraction_builds(tmp_path, embedder, sample_corpus,
                                                                          monkeypatch):
    after, after_counts, after_result = _build(tmp_path / "after.db", embedder, sample_corpus, 10**6, monkeypatch)
    beside, beside_counts, beside_result = _build(tmp_path / "beside.db", embedder, sample_corpus, 4, monkeypatch)
    with after, beside:
        assert after_counts.calls == ["MainThread"]  # one chunk: no prefetch, one encode after extraction
        assert "hippo-prefetch_0" in beside_counts.calls and len(beside_counts.calls) > 10
        counted = ("passages_added", "entities_added", "facts_added", "mentions_added", "synonyms_added",
                   "vectors_encoded")
        assert {f: getattr(beside_result, f) for f in counted} == {f: getattr(after_result, f) for f in counted}
        assert sorted(beside_counts.texts) == sorted(after_counts.texts)  # each text once, in either mode
        assert len(set(beside_counts.texts)) == len(beside_counts.texts) == beside_result.vectors_encoded
        texts = after.store.embed_texts()
        assert beside.store.embed_texts() == texts
        ours, theirs = after.store.vectors(texts), beside.store.vectors(texts)
        assert ours.keys() == theirs.keys() == texts.keys()
        assert max(float(np.abs(ours[h] - theirs[h]).max()) for h in texts) < 1e-5
        for question in QUESTIONS:
            assert [h.id for h in beside.recall(question).hits] == [h.id for h in after.recall(question).hits]
    assert not _prefetch_threads()


def test_a_prefetch_never_encodes_what_the_store_holds(tmp_path, embedder, sample_corpus, monkeypatch):
    memory, counting, first = _build(tmp_path / "m.db", embedder, sample_corpus[:30], 4, monkeypatch)
    with memory:
        before = set(counting.texts)
        counting.texts.clear()
        second = memory.index(sample_corpus)  # the first 30 again (unchanged), and 24 new documents
        assert second.passages_unchanged == first.passages_added
        assert counting.texts and not before & set(counting.texts)
        assert len(counting.texts) == second.vectors_encoded


def test_an_encoder_failing_in_the_background_fails_the_call_and_writes_nothing(tmp_path, embedder,
                                                                               sample_corpus, monkeypatch):
    monkeypatch.setattr(indexing, "EXTRACT_CHUNK", 4)
    broken = CountingEmbedder(embedder, fail_after=3)
    with Memory(SQLiteStore(tmp_path / "m.db"), embedder=broken) as memory:
        with pytest.raises(RuntimeError, match="the encoder broke"):
            memory.index(sample_corpus)
        assert memory.stats().passages == 0 and not memory.store.embed_texts()
        assert not _prefetch_threads()


def test_an_extractor_failing_midway_stops_the_prefetch_and_writes_nothing(tmp_path, embedder, sample_corpus,
                                                                          monkeypatch):
    monkeypatch.setattr(indexing, "EXTRACT_CHUNK", 4)
    with Memory(SQLiteStore(tmp_path / "m.db"), embedder=embedder) as memory:
        spacy, calls = memory.extractor, []

        class Breaking:
            name = spacy.name

            def extract(self, passages):
                calls.append(len(passages))
                if len(calls) == 3:
                    raise RuntimeError("the extractor broke")
                return spacy.extract(passages)

        with pytest.raises(RuntimeError, match="the extractor broke"):
            memory.index(sample_corpus, extractor=Breaking())
        assert memory.stats().passages == 0 and not memory.store.embed_texts()
        assert not _prefetch_threads()
        assert memory.index(sample_corpus).passages_added == len(sample_corpus)  # and the store still works

