"""The OpenAI-compatible client and the tolerant parser, against a local fake endpoint
(real sockets, the real ``openai`` client): recorded, malformed, truncated, fenced and
``<think>`` answers, 429s, 5xx, timeouts, response_format refusals."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from hippo import Settings
from hippo.llm import (LLMClient, LLMConfig, LLMConfigError, LLMUnavailable, ParseError, Usage, loads_lenient,
                       parse_entities, parse_triples)
from hippo.llm.jsonparse import parse_lines, repair_truncated, strip_reasoning
from hippo.llm.prompts import NER_SCHEMA, TRIPLES_SCHEMA, ner_messages, triples_messages
from tests.fake_openai import FakeOpenAI, Reply, format_type

# -- the parser (pure) ---------------------------------------------------------------------


def test_plain_json_and_key_variants():
    assert parse_entities('{"named_entities": ["Caldry", "Morrowen"]}') == ["Caldry", "Morrowen"]
    assert parse_entities('{"entities": ["Caldry"]}') == ["Caldry"]
    assert parse_entities('{"NER": ["Caldry"]}') == ["Caldry"]
    assert parse_entities('{"Named Entities": [{"name": "Caldry", "type": "GPE"}]}') == ["Caldry"]
    assert parse_triples('{"extracted_triples": [["a", "b", "c"]]}') == ([("a", "b", "c")], 0)
    assert parse_triples('{"triplets": [{"subject": "a", "relation": "b", "object": "c"}]}') == (
        [("a", "b", "c")], 0)
    assert parse_triples('{"triples": [{"head": "a", "predicate": "b", "tail": 1868}]}') == (
        [("a", "b", "1868")], 0)


def test_fenced_answers_and_prose_around_them():
    fenced = 'Here you go:\n```json\n{"named_entities": ["Ørnø", "青波島"]}\n```\nAnything else?'
    assert parse_entities(fenced) == ["Ørnø", "青波島"]
    assert parse_triples('```\n[["a", "b", "c"]]\n```') == ([("a", "b", "c")], 0)
    assert parse_entities('Sure! {"named_entities": ["A"]} Hope this helps.') == ["A"]


def test_think_blocks_are_not_the_answer():
    answer = '<think>The passage says {"named_entities": ["wrong"]}...</think>\n{"named_entities": ["right"]}'
    assert parse_entities(answer) == ["right"]
    assert strip_reasoning('reasoning without opening tag</think> {"a": 1}') == '{"a": 1}'
    with pytest.raises(ParseError, match="only reasoning"):
        loads_lenient("<think>I ran out of tokens while thinking about {")


def test_bare_arrays():
    assert parse_entities('["Caldry", "Morrowen", "Caldry"]') == ["Caldry", "Morrowen"]
    assert parse_triples('[["Tobiah Südhof", "invented", "tide-clock"], ["x", "y"]]') == (
        [("Tobiah Südhof", "invented", "tide-clock")], 1)
    assert parse_triples('["a", "b", "c"]') == ([("a", "b", "c")], 0)


def test_truncated_json_keeps_what_was_complete():
    cut = '{"triples": [["a", "b", "c"], ["d", "e", "f"], ["g", "h'
    assert parse_triples(cut) == ([("a", "b", "c"), ("d", "e", "f")], 1)  # ["g"] is cut: dropped
    assert parse_entities('{"named_entities": ["Caldry", "Morr') == ["Caldry"]
    assert repair_truncated('{"named_entities": ["Caldry"') == {"named_entities": ["Caldry"]}
    assert parse_triples('```json\n{"triples": [["a", "b", "c"], ["d"') == ([("a", "b", "c")], 1)


def test_python_literals_and_nested_answers():
    assert parse_triples("{'triples': [('a', 'b', 'c')]}") == ([("a", "b", "c")], 0)
    assert parse_entities('{"result": {"named_entities": ["A"]}}') == ["A"]


def test_unusable_answers_raise_parse_error():
    for answer in ("", "   ", "I cannot help with that.", '{"summary": "no lists here"}', "{{{{"):
        with pytest.raises(ParseError):
            parse_triples(answer)
    with pytest.raises(ParseError, match="no entity list"):
        parse_entities('{"note": "x", "count": 2}')


def test_missing_elements_drop_the_triple_not_the_answer():
    triples, dropped = parse_triples('{"triples": [["a", null, "c"], ["a", "b", "c"], ["a", "", "c"], "junk"]}')
    assert triples == [("a", "b", "c")] and dropped == 3


def test_plain_lines():
    assert parse_lines("1. First clue here\n- second clue\n\n* third\n```") == ["First clue here", "second clue",
                                                                                  "third"]


# -- the client over HTTP -----------------------------------------------------------------


def _client(server: FakeOpenAI, **config: object) -> LLMClient:
    defaults = {"model": "fake-model", "base_url": server.url, "timeout": 5.0, "max_retries": 3}
    return LLMClient(LLMConfig(**{**defaults, **config}), backoff=0.01)  # type: ignore[arg-type]


def test_recorded_answer_with_usage_and_schema():
    with FakeOpenAI(lambda r: '{"named_entities": ["Caldry"]}') as server:
        client = _client(server)
        usage = Usage()
        completion = client.complete("ner", ner_messages("Caldry\nCaldry is a town."), schema=NER_SCHEMA,
                                     usage=usage)
        client.close()
    assert parse_entities(completion.text) == ["Caldry"]
    [request] = server.requests
    assert request["model"] == "fake-model" and request["temperature"] == 0
    assert request["response_format"]["type"] == "json_schema"
    assert request["response_format"]["json_schema"]["name"] == "named_entities"
    stage = usage.since()["ner"]
    assert stage["calls"] == 1 and stage["prompt_tokens"] > 10 and stage["completion_tokens"] > 0
    assert stage["retries"] == 0


def test_rate_limits_and_server_errors_are_retried():
    with FakeOpenAI(lambda r: '{"named_entities": []}') as server:
        server.script(Reply(status=429, headers={"Retry-After": "0"}), Reply(status=503), Reply(status=500))
        client = _client(server)
        usage = Usage()
        completion = client.complete("ner", ner_messages("x"), usage=usage)
    assert completion.text == '{"named_entities": []}'
    assert server.statuses == [429, 503, 500, 200]
    assert usage.since()["ner"]["retries"] == 3 and usage.since()["ner"]["calls"] == 1


def test_retry_after_is_honoured():
    with FakeOpenAI(lambda r: "{}") as server:
        server.script(Reply(status=429, headers={"Retry-After": "0.4"}))
        client = _client(server)
        start = time.perf_counter()
        client.complete("ner", ner_messages("x"))
        waited = time.perf_counter() - start
    assert waited >= 0.4


def test_timeouts_are_retried_then_give_up():
    with FakeOpenAI(lambda r: "{}") as server:
        server.script(Reply(content="{}", delay=1.5))
        client = _client(server, timeout=0.4)
        usage = Usage()
        assert client.complete("triples", ner_messages("x"), usage=usage).text == "{}"
        assert usage.since()["triples"]["retries"] == 1
        server.script(*[Reply(status=502)] * 3)
        with pytest.raises(LLMUnavailable, match="failed 3 times"):
            _client(server, max_retries=2).complete("triples", ner_messages("x"), usage=usage)
    assert usage.since()["triples"]["failures"] == 1


def test_response_format_refusal_steps_down_and_sticks():
    with FakeOpenAI(lambda r: '{"named_entities": ["A"]}', refuse_formats=frozenset({"json_schema"})) as server:
        client = _client(server)
        usage = Usage()
        for _ in range(2):
            assert parse_entities(client.complete("ner", ner_messages("x"), schema=NER_SCHEMA, usage=usage).text)
    assert [format_type(r) for r in server.requests] == ["json_schema", "json_object", "json_object"]
    assert client.json_level == "object"
    assert all("schema" not in r["response_format"] for r in server.requests[1:])  # grammar only when pinned
    assert usage.since()["ner"]["format_downgrades"] == 1
    with FakeOpenAI(lambda r: '["A"]', refuse_formats=frozenset({"json_schema", "json_object"})) as server:
        client = _client(server)
        client.complete("ner", ner_messages("x"), schema=NER_SCHEMA)
    assert [format_type(r) for r in server.requests] == ["json_schema", "json_object", None]
    assert client.json_level == "off"
    with FakeOpenAI(lambda r: "{}", refuse_formats=frozenset({"json_schema"})) as server:
        client = _client(server)
        client.complete("clues", ner_messages("x"))  # no schema: grammar and object send the same, tried once
    assert [r.get("response_format") for r in server.requests] == [{"type": "json_object"}]


def test_the_strict_schema_drops_size_bounds_and_the_pinned_grammar_keeps_them():
    """Triples are three strings: llama.cpp compiles the bounds into its grammar, OpenAI's strict mode may
    refuse them."""
    with FakeOpenAI(lambda r: '{"triples": [["a", "b", "c"]]}') as server:
        _client(server).complete("triples", triples_messages("x", ["a"]), schema=TRIPLES_SCHEMA)
        _client(server, json_mode="grammar").complete("triples", triples_messages("x", ["a"]), schema=TRIPLES_SCHEMA)
    strict, grammar = (r["response_format"] for r in server.requests)
    triples = strict["json_schema"]["schema"]["properties"]["triples"]
    assert triples == {"type": "array", "items": {"type": "array", "items": {"type": "string"}}}
    assert strict["json_schema"]["strict"] is True
    assert grammar["type"] == "json_object"
    bounded = grammar["schema"]["properties"]["triples"]
    assert bounded["items"]["minItems"] == bounded["items"]["maxItems"] == 3 and bounded["maxItems"] > 3


# What llama-cpp-python's server (0.3.36) answers to response_format json_schema: HTTP 500.
LLAMA_CPP_SCHEMA_REFUSAL = ("1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', "
                            "'type'), 'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema'}")


def test_a_format_refused_with_a_server_error_steps_down_without_retrying():
    def respond(request):
        if format_type(request) == "json_schema":
            return Reply(status=500, error=LLAMA_CPP_SCHEMA_REFUSAL)
        return '{"named_entities": ["A"]}'

    with FakeOpenAI(respond) as server:
        client, usage = _client(server, max_retries=3), Usage()
        for _ in range(2):
            assert parse_entities(client.complete("ner", ner_messages("x"), schema=NER_SCHEMA, usage=usage).text)
        server.script(Reply(status=500, error="CUDA out of memory"), Reply(status=500, error="still busy"))
        client.complete("ner", ner_messages("x"), schema=NER_SCHEMA, usage=usage)  # a plain 500 is retried
    assert [format_type(r) for r in server.requests] == ["json_schema", *["json_object"] * 5]
    assert client.json_level == "object" and usage.since()["ner"]["retries"] == 2


def test_gemma_270m_answers_replayed():
    """Answers Gemma 3 270M (Q4_K_M) gave through llama.cpp's server under json_object
    (benchmarks/llm_local.py): its list repeated under a second key is read once."""
    ner = ('{"named_entities": ["Adolescence", "Psychology", "Gender", "Identity"], '
           '"name": ["Adolescence", "Psychology", "Gender", "Identity"]}\n ')
    with FakeOpenAI(lambda request: ner) as server:
        answer = _client(server).complete("ner", ner_messages("x"), schema=NER_SCHEMA).text
    assert parse_entities(answer) == ["Adolescence", "Psychology", "Gender", "Identity"]


def test_pinned_json_mode_does_not_step_down():
    with FakeOpenAI(lambda r: "{}", refuse_formats=frozenset({"json_schema"})) as server:
        client = _client(server, json_mode="schema")
        with pytest.raises(Exception, match="not supported"):
            client.complete("ner", ner_messages("x"), schema=NER_SCHEMA)
        assert len(server.requests) == 1


def test_refused_key_or_model_names_the_setting():
    with FakeOpenAI(lambda r: "{}") as server:
        server.script(Reply(status=401, error="bad key"))
        with pytest.raises(LLMConfigError, match="llm_api_key"):
            _client(server).complete("ner", ner_messages("x"))
        server.script(Reply(status=404, error="model not found"))
        with pytest.raises(LLMConfigError, match="llm_model: .* 'fake-model'"):
            _client(server).complete("ner", ner_messages("x"))
        assert len(server.requests) == 2  # neither was retried


def test_map_bounds_concurrency_and_keeps_failures_per_item():
    with FakeOpenAI(lambda r: Reply(content="{}", delay=0.15)) as server:
        client = _client(server, concurrency=3)

        def work(i: int) -> str:
            if i == 4:
                raise ValueError("item 4 is bad")
            return client.complete("ner", ner_messages(str(i))).text

        results = client.map(work, list(range(10)))
    assert server.max_in_flight <= 3 and server.max_in_flight >= 2
    assert isinstance(results[4], ValueError)
    assert all(r == "{}" for i, r in enumerate(results) if i != 4)


def test_settings_from_environment(monkeypatch):
    monkeypatch.setenv("HIPPO_LLM_MODEL", "qwen2.5:7b")
    monkeypatch.setenv("HIPPO_LLM_BASE_URL", "http://127.0.0.1:11434/v1")
    monkeypatch.setenv("HIPPO_LLM_API_KEY", "sk-secret")
    monkeypatch.setenv("HIPPO_LLM_CONCURRENCY", "2")
    settings = Settings()
    config = LLMConfig.from_settings(settings)
    assert config is not None and config.model == "qwen2.5:7b" and config.concurrency == 2
    assert config.api_key == "sk-secret"
    assert "sk-secret" not in json.dumps(settings.model_dump(mode="json"))  # never written into results
    assert LLMConfig.from_settings(Settings(llm_model=None)) is None


def test_no_key_for_openai_itself_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(LLMConfigError, match="llm_api_key"):
        LLMClient(LLMConfig(model="gpt-4o-mini"))


def test_offline_path_never_imports_openai():
    code = (
        "import sys, hippo, hippo.memory.engine, hippo.llm.extractor, hippo.memory.clues\n"
        "from hippo.llm.parts import llm_parts\n"
        "parts = llm_parts(hippo.Settings(), store=None, fallback=None)\n"
        "assert parts.client is None and parts.extractor is None and parts.fact_filter is None\n"
        "assert 'openai' not in sys.modules, 'openai imported'\n"
    )
    out = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr


def test_reasoning_models_refusing_max_tokens_or_temperature_are_adapted_to():
    def respond(request: dict) -> Reply | str:
        if "max_tokens" in request:
            return Reply(status=400, error="Unsupported parameter: 'max_tokens' is not supported with this "
                                           "model. Use 'max_completion_tokens' instead.")
        if "temperature" in request:
            return Reply(status=400, error="Unsupported value: 'temperature' does not support 0 with this model.")
        return '{"named_entities": ["A"]}'

    with FakeOpenAI(respond) as server:
        client = _client(server)
        for _ in range(2):
            assert parse_entities(client.complete("ner", ner_messages("x"), schema=NER_SCHEMA).text) == ["A"]
    first, *_, last = server.requests
    assert "max_tokens" in first and "max_completion_tokens" in last and "temperature" not in last
    assert len(server.requests) == 4  # two refusals, then both calls go straight through
    assert client.json_level == "schema", "a parameter refusal is not a response_format refusal"


def test_entity_trios_are_not_triples():
    """Held to three strings by a grammar, Gemma 3 270M wrote names for predicates (benchmarks/llm_local.py)."""
    from hippo.llm.extractor import relational

    entities = ["Hank Snow", "Yodeling Ranger", "Songwriter", "RCA Victor"]
    answer = [("Hank Snow", "Yodeling Ranger", "Songwriter"), ("Hank Snow", "yodeling  ranger", "Singer"),
              ("Hank Snow", "signed with", "RCA Victor")]
    assert relational(answer, entities) == ([("Hank Snow", "signed with", "RCA Victor")], 2)
    assert relational(answer[:1], []) == (answer[:1], 0)  # without names, nothing to compare with


def test_triples_about_nothing_in_the_passage_are_dropped():
    """Gemma 3 270M copied the prompt's example into a passage on canon law."""
    from hippo.llm.extractor import grounded_triples

    passage = "Canon law degrees (D.C.L.) were given at Oxford; Doctors' Commons served the civil lawyers."
    answer = [("Church of the Good Shepherd", "was built on shore of", "Lake Tekapo"),
              ("Canon law", "is taught at", "a university"), ("the Doctors", "served", "civil lawyers")]
    assert grounded_triples(answer, passage) == (answer[1:], 1)
