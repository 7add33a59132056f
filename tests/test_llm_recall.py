"""The recognition filter and clue expansion: offline sources, the LLM through a local
OpenAI-compatible endpoint, and the guards (fluent clue, short lines, floor, budget)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from hippo import Memory, Settings
from hippo.memory.clues import Candidate, interleave, named_phrases, screen
from hippo.memory.recall import Recaller
from hippo.memory.source import LocalSource
from tests.fake_openai import FakeOpenAI, Reply, last_user, stage_of

QUESTION = "Who is the current governor of the island where the inventor of the tide-clock was born?"


@contextmanager
def llm_memory(sample_memory: Memory, server: FakeOpenAI, **settings: object) -> Iterator[Memory]:
    """A second memory over the sample store, with the LLM pointed at the fake endpoint."""
    memory = Memory(sample_memory.store, embedder=sample_memory.embedder,
                    settings=Settings(llm_model="fake-model", llm_base_url=server.url, llm_max_retries=1,
                                      **settings))
    try:
        yield memory
    finally:
        memory.llm.close()  # the store belongs to sample_memory


def _numbered_facts(request: dict) -> list[str]:
    return re.findall(r"^\d+\. (.*)$", last_user(request), flags=re.MULTILINE)


# -- recognition filter --------------------------------------------------------------------------


def test_pure_recaller_with_a_filter_callable(sample_memory):
    source = LocalSource(sample_memory.engine.state, sample_memory.store, None)
    seen: list[list[str]] = []

    def keep_second(query: str, facts: list[str]) -> list[int]:
        seen.append(facts)
        return [1, 1, 99]  # duplicates and out-of-range indices are ignored

    # The filter sees the five retrieved facts as retrieved: anchoring is the offline stand-in, skipped here.
    unanchored = sample_memory.settings.model_copy(update={"fact_anchor": False})
    plain = Recaller(unanchored, sample_memory.embedder.encode,
                     sample_memory._query_parser.query_phrases).rank(QUESTION, source, n=5, k=5)
    filtered = Recaller(sample_memory.settings, sample_memory.embedder.encode,
                        sample_memory._query_parser.query_phrases, fact_filter=keep_second
                        ).rank(QUESTION, source, n=5, k=5)
    assert len(plain.kept_facts) == 5 and len(seen[0]) == 5
    assert filtered.kept_facts == [plain.kept_facts[1]]
    assert [c.query for c in filtered.clues if c.kind == "fact"] == [seen[0][1]]
    assert filtered.strategy == "graph" and "filter" in filtered.timings


def test_filter_keeps_the_facts_the_model_chose(sample_memory):
    def respond(request: dict) -> str:
        assert stage_of(request) == "filter"
        facts = _numbered_facts(request)
        keep = [i + 1 for i, f in enumerate(facts) if "Südhof" in f or "governor" in f]
        return json.dumps({"keep": keep})

    with FakeOpenAI(respond) as server, llm_memory(sample_memory, server) as memory:
        result = memory.recall(QUESTION, n=5, k=5)
        [request] = server.requests
    facts = _numbered_facts(request)
    wanted = [f for f in facts if "Südhof" in f or "governor" in f]
    assert wanted and len(wanted) < len(facts), "the test needs the filter to drop something"
    assert result.strategy == "graph"
    assert [c.query for c in result.clues if c.kind == "fact"] == wanted[:4]
    assert memory.llm.fact_filter.usage.since()["filter"]["calls"] == 1


@pytest.mark.parametrize("answer", ['{"keep": []}', '{"fact": [["Larkspur", "protects", "continuity"]]}',
                                    "None of these facts is relevant."])
def test_filter_keeping_nothing_falls_back_and_says_so(sample_memory, answer):
    with FakeOpenAI(lambda r: answer) as server, llm_memory(sample_memory, server) as memory:
        result = memory.recall(QUESTION, n=5, k=5)
    if answer.startswith("None"):  # not JSON at all: no verdict, recall as offline
        assert result.strategy == "graph" and "fact filter unavailable (ParseError)" in result.note
        return
    assert result.strategy in ("entity_link", "dense")
    assert "the fact filter kept none of the 5 retrieved facts" in result.note
    assert not [c for c in result.clues if c.kind == "fact"]
    assert result.hits


def test_filter_outage_keeps_recall_unchanged(sample_memory):
    offline = sample_memory.recall(QUESTION, n=5, k=5)
    with FakeOpenAI(lambda r: Reply(status=500)) as server, llm_memory(sample_memory, server) as memory:
        result = memory.recall(QUESTION, n=5, k=5)
    assert result.note and "fact filter unavailable (LLMUnavailable)" in result.note
    assert [h.id for h in result.hits] == [h.id for h in offline.hits]
    assert [c.query for c in result.clues] == [c.query for c in offline.clues]


# -- clue guards, pure -------------------------------------------------------------------------


def test_screen_keeps_the_query_first_and_drops_short_and_duplicate_lines():
    candidates = [Candidate("Tobiah Südhof born in Brennhafen", "fact", 0.9),
                  Candidate("Südholm governor", "question", 1.0),  # three words
                  Candidate("tobiah südhof   born in brennhafen", "span", 1.0),  # duplicate after normalizing
                  Candidate("Who founded Südhof & Lind Horology?", "question", 1.0),
                  Candidate(QUESTION.upper(), "question", 1.0),  # the query again
                  Candidate("Tobiah Südhof", "entity", 0.5, grounded=True)]  # seed clues are not search lines
    kept = screen(QUESTION, candidates)
    assert [c.kind for c in kept] == ["query", "fact", "question", "entity"]
    assert kept[0].text == QUESTION


def test_interleave_shares_the_budget_and_skips_repeats():
    primary = [(f"p{i}", 1.0 / (i + 1)) for i in range(6)]
    merged = interleave(primary, [["c1", "p0", "c2"], ["c3"]], share=0.4)
    assert [pid for pid, _ in merged][:5] == ["p0", "p1", "c1", "p2", "c3"]
    assert len(merged) == len({pid for pid, _ in merged}) == 9
    assert [pid for pid, _ in interleave(primary, [["c1"]], share=0.0)][:6] == [p for p, _ in primary]
    assert [pid for pid, _ in interleave([], [["c1", "c2"]], share=0.5)] == ["c1", "c2"]


def test_named_phrases_are_things_not_dates():
    phrases = named_phrases("Which governor approved the Larkspur Continuity Shield for Südholm in 1907?")
    assert any("Larkspur" in p for p in phrases) and any("Südholm" in p for p in phrases)
    assert not any("1907" in p for p in phrases)


# -- clue expansion, offline ---------------------------------------------------------------------


def test_offline_expansion_obeys_every_guard(sample_memory):
    plain = sample_memory.recall(QUESTION, n=6, k=5)
    result = sample_memory.recall(QUESTION, n=6, k=5, expand=True)
    clues = result.clues
    assert clues[0].kind == "query" and clues[0].query == QUESTION
    assert clues[0].passage_ids == [h.id for h in plain.hits[:3]], "the query's passages are plain recall's"
    assert 2 <= len(clues) <= 6
    assert len({c.query.casefold() for c in clues}) == len(clues)
    assert {c.kind for c in clues[1:]} <= {"fact", "neighbour", "entity"}
    assert any(c.kind == "neighbour" for c in clues), "entity neighbourhoods are a source"
    for clue in clues[1:]:
        assert clue.kind == "entity" or (len(clue.query.split()) >= 4 and clue.passage_ids)
        assert clue.grounded is True  # offline clues come from the graph
    assert len(result.hits) == 5 and len({h.id for h in result.hits}) == 5
    assert "clues" in result.timings
    clue_found = {pid for c in clues[1:] for pid in c.passage_ids}
    assert {h.id for h in result.hits} - {h.id for h in plain.hits} <= clue_found
    budget = sample_memory.recall(QUESTION, n=6, k=5, expand=True, token_budget=200)
    assert sum(len(h.text) for h in budget.hits) <= 200 * 4 + 3 * len(budget.hits)


def test_expansion_floor_drops_clues_that_find_nothing(sample_memory):
    def respond(request: dict) -> str:
        return json.dumps({"questions": ["qwzx vbnm plok trew asdf"], "spans": ["Tobiah Südhof was born in Brennhafen"]})

    with FakeOpenAI(respond) as server, llm_memory(sample_memory, server, llm_filter=False) as memory:
        result = memory.recall(QUESTION, n=8, k=5, expand=True)
    texts = [c.query for c in result.clues]
    assert "qwzx vbnm plok trew asdf" not in texts
    assert "Tobiah Südhof was born in Brennhafen" in texts


def test_expansion_respects_spaces(open_memory):
    memory = open_memory()
    memory.index([{"title": "Tide-clock", "text": "The tide-clock was invented by Tobiah Südhof in Brennhafen."},
                  {"title": "Tobiah Südhof", "text": "Tobiah Südhof was born in Brennhafen on Südholm."}])
    memory.index([{"title": "Vault note", "text": "Tobiah Südhof hid the Orrery Cipher in the Zennor Vault."}],
                 space="team:private")
    result = memory.recall("Where was the inventor of the tide-clock born?", n=8, k=5, expand=True,
                           spaces=["org"])
    dumped = json.dumps(result.model_dump(by_alias=True), ensure_ascii=False)
    assert "Vault" not in dumped and "Orrery" not in dumped and "Zennor" not in dumped
    private = memory.recall("Orrery Cipher Zennor Vault", k=5, spaces=["team:private"]).hits[0].id
    assert private not in dumped


# -- the fluent clue ---------------------------------------------------------------------------

FLUENT = "Which governor approved the Larkspur Continuity Shield for Südholm?"
INVENTED = "The Quantum Harbour Authority of Zentara governs Südholm"
GOOD = "Tobiah Südhof was born in Brennhafen on Südholm"


def _clue_writer(fluent: bool):
    def respond(request: dict) -> str:
        assert stage_of(request) == "clues"
        questions = [FLUENT] if fluent else []
        spans = [GOOD, "Südholm governor"] + ([INVENTED] if fluent else [])
        return "<think>draft</think>```json\n" + json.dumps({"questions": questions, "spans": spans}) + "\n```"
    return respond


def test_a_fluent_clue_is_never_grounded_and_never_brings_a_passage(sample_memory):
    runs = {}
    for fluent in (True, False):
        with FakeOpenAI(_clue_writer(fluent)) as server, \
                llm_memory(sample_memory, server, llm_filter=False, clue_passage_share=0.6) as memory:
            runs[fluent] = memory.recall(QUESTION, n=8, k=5, expand=True)
            assert server.count("clues") == 1
            assert memory.llm.clue_writer.usage.since()["clues"]["calls"] == 1
    with_fluent, without = runs[True], runs[False]
    by_text = {c.query: c for c in with_fluent.clues}
    assert by_text[GOOD].grounded is True and by_text[GOOD].kind == "span"
    for text in (FLUENT, INVENTED):
        clue = by_text[text]
        assert clue.grounded is False
        assert clue.passage_ids, "the fluent clue does find loosely related passages..."
    assert "Südholm governor" not in by_text  # three words
    unused = {pid for text in (FLUENT, INVENTED) for pid in by_text[text].passage_ids}
    assert unused - {h.id for h in without.hits}, "...which would change the hits if they were used"
    # ...but they are not used: the hits are exactly those of the run without the fluent clues.
    assert [h.id for h in with_fluent.hits] == [h.id for h in without.hits]
    grounded_found = {pid for c in with_fluent.clues if c.grounded is not False for pid in c.passage_ids}
    plain = {pid for pid in with_fluent.clues[0].passage_ids}
    assert all(h.id in grounded_found or h.id in plain or h.id not in unused for h in with_fluent.hits)


def test_fluent_clues_can_be_dropped(sample_memory):
    with FakeOpenAI(_clue_writer(True)) as server, \
            llm_memory(sample_memory, server, llm_filter=False, clue_ungrounded="drop") as memory:
        result = memory.recall(QUESTION, n=8, k=5, expand=True)
    texts = [c.query for c in result.clues]
    assert FLUENT not in texts and INVENTED not in texts and GOOD in texts
    assert all(c.grounded is not False for c in result.clues[1:])


def test_clue_writer_outage_falls_back_to_offline_sources(sample_memory):
    with FakeOpenAI(lambda r: Reply(status=503)) as server, llm_memory(sample_memory, server, llm_filter=False) as memory:
        result = memory.recall(QUESTION, n=6, k=5, expand=True)
    assert "clue writer unavailable (LLMUnavailable)" in result.note
    assert result.clues[0].kind == "query" and any(c.kind in ("fact", "neighbour") for c in result.clues)


def test_expansion_on_an_empty_memory_and_on_dense_fallback(open_memory):
    memory = open_memory()
    empty = memory.recall("Where was the inventor of the tide-clock born?", expand=True)
    assert empty.strategy == "empty" and [c.kind for c in empty.clues] == ["query"] and not empty.hits
    memory.index([{"title": "", "text": "a quiet grey morning over the water and nothing else at all"}])
    dense = memory.recall("zzqx", expand=True, k=3)
    assert dense.strategy == "dense" and dense.clues[0].kind == "query" and dense.hits
