"""LLM OpenIE through a local OpenAI-compatible endpoint: the same graph as HippoRAG's
GPT-3.5 file when the endpoint answers with it, per-passage fallback to spaCy for answers
that cannot be read, the store cache on re-index, usage in the index result."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from hippo import Memory, Settings
from hippo.datasets import load_dataset
from hippo.extract import OpenIEImport, SpacyExtractor
from hippo.llm.extractor import CACHE_NAMESPACE, LLMExtractor, StoreExtractionCache, cache_key
from hippo.llm import PROMPT_VERSION, LLMClient, LLMConfig, LLMConfigError
from hippo.models import Document
from hippo.store import SQLiteStore
from tests.fake_openai import FakeOpenAI, Reply, last_user, stage_of

SUBSET = 100


class MemoEmbedder:
    """The session embedder, remembering texts: two indexes of one corpus encode it once."""

    def __init__(self, inner) -> None:
        self.inner, self.name, self.dim = inner, inner.name, inner.dim
        self._memo: dict[str, np.ndarray] = {}

    def encode(self, texts: list[str]) -> np.ndarray:
        missing = list(dict.fromkeys(t for t in texts if t not in self._memo))
        if missing:
            self._memo.update(zip(missing, self.inner.encode(missing), strict=True))
        return np.stack([self._memo[t] for t in texts]) if texts else np.zeros((0, self.dim), dtype=np.float32)


def _graph(store) -> tuple[set[str], set[str], set[tuple[str, str]]]:
    data = store.load_graph()
    return set(data.entities), {f[0] for f in data.facts}, set(data.mentions)


class Recorded:
    """Answers HippoRAG's recorded GPT-3.5 output for the passage a request carries."""

    def __init__(self, docs: list[dict]) -> None:
        self.by_text = {" ".join(d["text"].split()): d for d in docs}

    def __call__(self, request: dict) -> str:
        message = " ".join(last_user(request).split())
        matches = [text for text in self.by_text if text in message]
        assert matches, f"no recorded passage in {message[:80]!r}"
        doc = self.by_text[max(matches, key=len)]
        if stage_of(request) == "ner":
            return json.dumps({"named_entities": doc["extracted_entities"]})
        assert stage_of(request) == "triples"
        entities = json.loads(message.split("Named entities: ", 1)[1])["named_entities"]
        assert entities == list(dict.fromkeys(doc["extracted_entities"])), "triples conditioned on the NER answer"
        return json.dumps({"triples": doc["extracted_triples"]})


@pytest.fixture(scope="module")
def musique(shared_datasets: Path):
    dataset = load_dataset(shared_datasets / "hipporag_musique_train100")
    openie = json.loads(dataset.openie_file.read_text(encoding="utf-8"))
    return dataset.documents[:SUBSET], openie["docs"][:SUBSET], dataset.openie_file


def _client(server: FakeOpenAI, **config) -> LLMClient:
    return LLMClient(LLMConfig(**{"model": "gpt-3.5-turbo-1106", "base_url": server.url, "concurrency": 4,
                                  "max_retries": 2, "timeout": 10.0, **config}), backoff=0.01)


def test_llm_extraction_builds_the_same_graph_as_the_openie_file(musique, embedder, tmp_path):
    documents, docs, openie_file = musique
    settings = Settings(passage_chars=2000)  # MuSiQue paragraphs stay whole, as in the file
    shared = MemoEmbedder(embedder)
    with Memory(SQLiteStore(tmp_path / "file.db"), settings=settings, embedder=shared) as imported:
        importer = OpenIEImport.from_file(openie_file, fallback=SpacyExtractor())
        imported.index(documents, extractor=importer)
        assert importer.missed == 0
        expected = _graph(imported.store)

    with FakeOpenAI(Recorded(docs)) as server, \
            Memory(SQLiteStore(tmp_path / "llm.db"), settings=settings, embedder=shared) as memory:
        extractor = LLMExtractor(_client(server), fallback=SpacyExtractor(),
                                 cache=StoreExtractionCache(memory.store))
        result = memory.index(documents, extractor=extractor)
        assert not server.errors
        assert extractor.fallbacks == []
        got = _graph(memory.store)
        assert server.count("ner") == server.count("triples") == SUBSET

        # Usage is reported per stage, with tokens, in the index result.
        usage = result.usage
        assert usage is not None and usage["llm_passages"] == SUBSET and usage["cache_hits"] == 0
        assert usage["stages"]["ner"]["calls"] == SUBSET and usage["stages"]["triples"]["calls"] == SUBSET
        assert usage["total"]["prompt_tokens"] > 0 and usage["total"]["completion_tokens"] > 0
        assert usage["fallbacks"] == [] and usage["prompt_version"] == PROMPT_VERSION

        # Re-indexing the same texts under other document ids pays nothing: the store's cache answers.
        copies = [Document(id=f"copy-{i}", title=d.title, text=d.text) for i, d in enumerate(documents)]
        again = memory.index(copies, extractor=extractor)
        assert server.count() == 2 * SUBSET, "no call on re-index"
        assert again.passages_added == SUBSET and again.usage["cache_hits"] == SUBSET
        assert again.usage["total"]["calls"] == 0 and again.usage["llm_passages"] == 0
        _, facts_after, _ = _graph(memory.store)
        assert len(facts_after) == 2 * len(got[1]), "the cached answers rebuild the same facts"

    entities, facts, mentions = got
    assert len(facts) > 500 and len(entities) > 500
    assert entities == expected[0]
    assert facts == expected[1]
    assert mentions == expected[2]


def test_cache_keys_follow_model_and_prompt_version(tmp_path):
    store = SQLiteStore(tmp_path / "kv.db")
    try:
        cache = StoreExtractionCache(store)
        text = "Caldry\nCaldry is the capital."
        a, b = cache_key(text, "model-a"), cache_key(text, "model-b")
        assert a != b and a != cache_key(text, "model-a", "older-prompts") and a == cache_key(text, "model-a")
        from hippo.extract.base import Extraction, NamedEntity, Triple

        extraction = Extraction(entities=[NamedEntity(name="Caldry")],
                                triples=[Triple(subject="Caldry", predicate="capital of", object="Veskari")])
        cache.put({a: extraction})
        assert cache.get([a, b]) == {a: extraction}
        store.put_values(CACHE_NAMESPACE, {b: "{not json"})
        assert cache.get([b]) == {}, "a damaged entry is a miss"
    finally:
        store.close()


# -- fallbacks on a small corpus, through the settings ---------------------------------------------


def _title(message: str) -> str:
    passage = message.split("Passage:\n", 1)[1]
    return passage.split("\n", 1)[0]


def _sample_responder(request: dict) -> Reply | str:
    """Well-formed answers, except for a few passages chosen by title."""
    title = _title(last_user(request))
    stage = stage_of(request)
    if stage == "ner":
        if title == "Caldry":
            return "I'm sorry, I can't help with listing entities."
        if title == "Ørnø":
            return f'```json\n{{"named_entities": ["{title}", "Skjelvik"]}}\n```'
        if title == "Südholm":
            return f'<think>Names in the passage... {{"named_entities": ["x"]}}</think>{{"entities": ["{title}"]}}'
        if title == "Lanthorn Isle":
            return Reply(status=503)
        return json.dumps({"named_entities": [title]})
    if title == "Morrowen":  # ran out of tokens inside the third triple
        return Reply(content='{"triples": [["Morrowen", "is largest island of", "Veskari Archipelago"], '
                             '["Morrowen", "has principal town", "Caldry"], ["Morrowen", "has',
                     finish_reason="length")
    if title == "Ørnø":
        return '```\n[["Ørnø", "has largest settlement", "Skjelvik"]]\n```'
    return json.dumps({"triples": [{"subject": title, "predicate": "is described in", "object": "the sample"}]})


def test_unreadable_answers_fall_back_per_passage_without_losing_the_batch(open_memory, sample_corpus):
    with FakeOpenAI(_sample_responder) as server:
        memory = open_memory(llm_model="fake-model", llm_base_url=server.url, llm_max_retries=1,
                             llm_concurrency=3)
        assert isinstance(memory.extractor, LLMExtractor)
        result = memory.index(sample_corpus)
        assert not server.errors
    stats = memory.stats()
    assert result.passages_added == stats.passages == len(sample_corpus)
    by_title = {p.title: p for p in memory.store.passages(pid for pid, _ in memory.store.load_graph().passages)}
    fell_back = {by_title["Caldry"].id, by_title["Lanthorn Isle"].id}
    assert set(result.usage["fallbacks"]) == fell_back == set(memory.extractor.fallbacks)
    assert result.usage["llm_passages"] == len(sample_corpus) - 2
    assert result.usage["stages"]["triples"]["truncated"] == 1
    assert result.usage["stages"]["ner"]["retries"] >= 1 and result.usage["stages"]["ner"]["failures"] == 1
    assert result.usage["stages"]["parse"]["failures"] == 1

    facts = memory.store.facts([f[0] for f in memory.store.load_graph().facts])
    by_passage: dict[str, set[tuple[str, str, str]]] = {}
    for f in facts:
        by_passage.setdefault(f.passage_id, set()).add((f.subject, f.predicate, f.object))
    # The truncated answer keeps its two complete triples.
    assert by_passage[by_title["Morrowen"].id] == {("Morrowen", "is largest island of", "Veskari Archipelago"),
                                                   ("Morrowen", "has principal town", "Caldry")}
    assert by_passage[by_title["Ørnø"].id] == {("Ørnø", "has largest settlement", "Skjelvik")}
    assert by_passage[by_title["Südholm"].id] == {("Südholm", "is described in", "the sample")}
    # The fallbacks hold spaCy's triples, not the fake's.
    for title in ("Caldry", "Lanthorn Isle"):
        triples = by_passage.get(by_title[title].id, set())
        assert triples and all(p != "is described in" for _, p, _ in triples)
    # Recall works on the mixed graph.
    assert memory.recall("Which town is the capital of the Veskari Archipelago?", k=3).hits


def test_a_refused_key_stops_indexing_and_writes_nothing(open_memory, sample_corpus):
    with FakeOpenAI(lambda r: Reply(status=401, error="invalid api key")) as server:
        memory = open_memory(llm_model="fake-model", llm_base_url=server.url, llm_api_key="sk-wrong")
        with pytest.raises(LLMConfigError, match="llm_api_key"):
            memory.index(sample_corpus[:5])
        assert server.count() <= 5 * 1, "a refused key is not retried"
    assert memory.stats().passages == 0


def test_an_unreachable_endpoint_falls_back_fast(open_memory, sample_corpus):
    with FakeOpenAI(lambda r: Reply(status=503)) as server:
        memory = open_memory(llm_model="fake-model", llm_base_url=server.url, llm_max_retries=0,
                             llm_concurrency=2)
        result = memory.index(sample_corpus[:20])
        calls = server.count()
    assert result.passages_added == 20 and len(result.usage["fallbacks"]) == 20
    assert calls < 20, f"the breaker stops calling a dead endpoint ({calls} calls for 20 passages)"


def test_offline_memory_reports_no_usage(open_memory, sample_corpus):
    memory = open_memory()
    assert memory.llm.client is None and isinstance(memory.extractor, SpacyExtractor)
    assert memory.index(sample_corpus[:2]).usage is None


def test_answers_name_the_passage(sample_corpus):
    # The fake server reads the title from the prompt; keep that contract visible.
    from hippo.llm.prompts import ner_messages, triples_messages

    assert _title(ner_messages("Caldry\nCaldry is a town.")[-1]["content"]) == "Caldry"
    assert _title(triples_messages("Caldry\nCaldry is a town.", ["Caldry"])[-1]["content"]) == "Caldry"
    assert re.search("Named entities: ", triples_messages("x", [])[-1]["content"])


@pytest.mark.neo4j
def test_llm_cache_lives_in_neo4j_too(neo4j_store, embedder, sample_corpus):
    docs = sample_corpus[:4]
    with FakeOpenAI(_sample_responder) as server:
        settings = Settings(llm_model="fake-model", llm_base_url=server.url)
        with Memory(neo4j_store(), settings=settings, embedder=embedder) as memory:
            first = memory.index(docs)
            assert first.usage["llm_passages"] == 4 and first.usage["total"]["calls"] == 8
        calls = server.count()
        with Memory(neo4j_store(), settings=settings, embedder=embedder) as memory:  # a new process, same server
            copies = [{**d, "id": f"copy-{i}"} for i, d in enumerate(docs)]
            again = memory.index(copies)
        assert server.count() == calls and again.usage["cache_hits"] == 4
        assert again.passages_added == 4


# Two answers Gemma 3 270M (Q4_K_M) gave through llama.cpp's server under json_object
# (benchmarks/llm_local.py, MuSiQue): valid JSON, useless content.
GEMMA_NER = ('{"named_entities": ["Adolescence", "Psychology", "Gender", "Identity", "Culture", "Developmental '
             'Stages", "Personality Development"], "name": ["Adolescence", "Psychology", "Gender", "Identity", '
             '"Culture", "Developmental Stages", "Personality Development"]}\n ')
GEMMA_TRIPLES = ('{"triples": [["Adolescence", "Psychology", "Gender", "Identity", "Culture", "Developmental Stages", '
                 '"Personality Development"], ["Adolescence", "Psychology", "Gender", "Identity", "Culture", '
                 '"Developmental Stages", "Personality Development"]]} ')


def test_a_small_models_well_formed_nonsense_falls_back_to_spacy(open_memory, sample_corpus):
    docs = sample_corpus[:4]
    hallucinated, unusable, trios = docs[0]["title"], docs[1]["title"], docs[2]["title"]

    def respond(request: dict) -> str:
        title, stage = _title(last_user(request)), stage_of(request)
        if stage == "ner":
            return GEMMA_NER if title == hallucinated else json.dumps({"named_entities": [title, "Songwriter"]})
        if title == unusable:
            return GEMMA_TRIPLES
        if title == trios:  # what the same model wrote when a grammar held it to three strings
            return json.dumps({"triples": [[title, "Songwriter", "Singer"]] * 32})
        return json.dumps({"triples": [[title, "is described in", "the sample"]]})

    with FakeOpenAI(respond) as server:
        memory = open_memory(llm_model="fake-model", llm_base_url=server.url, llm_concurrency=1)
        result = memory.index(docs)
    by_title = {p.title: p.id for p in memory.store.passages(pid for pid, _ in memory.store.load_graph().passages)}
    # Names the passage never mentions, "triples" of seven, and a name for a predicate: spaCy reads those
    # three passages instead.
    assert set(result.usage["fallbacks"]) == {by_title[hallucinated], by_title[unusable], by_title[trios]}
    assert result.usage["stages"]["parse"]["failures"] == 3
    names = {e.name for e in memory.store.entities(memory.store.load_graph().entities)}
    assert not names & {"Adolescence", "Psychology", "Gender", "Identity", "Singer"}
