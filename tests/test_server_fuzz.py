"""Random JSON, random JSON-RPC-shaped objects, random bytes, deeply nested values and random
headers (Host, Origin, Content-Type, keys) at the HTTP endpoint, over a real socket.

Whatever arrives, the server answers within the timeout: HTTP 200 and a valid
JSON-RPC response (or 204 when there is nothing to answer) to a well-formed
request, 401/403/415/421 to one its guard refuses, never a 500 or an internal
error; it keeps serving afterwards, and what was stored before the fuzzing is
still there, unchanged. Examples are bounded so the module takes well under a minute.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hippo import Memory, Settings
from hippo.datasets import SAMPLE
from hippo.server import Service
from hippo.server.config import ServerSettings
from hippo.server.http import background
from hippo.store import SQLiteStore

TIMEOUT = 30.0  # seconds: a reply later than this counts as a hang
FUZZ = settings(max_examples=120, deadline=None, database=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

METHODS = ["initialize", "info", "ping", "shutdown", "retrieve", "graph", "index/add", "index/delete",
           "memory/build", "memory/recall", "embed", "rerank", "notifications/cancel", "x-hippo/remember",
           "x-hippo/forget", "x-hippo/restore", "x-hippo/history", "x-hippo/memories", "x-hippo/nope", ""]

scalars = st.none() | st.booleans() | st.integers(-2**60, 2**60) | st.floats(allow_nan=False, allow_infinity=False) \
    | st.text(max_size=24)
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=10), inner, max_size=4), max_leaves=16)
texts = st.text(min_size=0, max_size=60)
counts = st.integers(-3, 1200) | st.sampled_from([0, 1, 5, 10, 200, 201, 1001]) | json_values
documents = st.lists(st.fixed_dictionaries({"text": texts}, optional={"id": st.text(max_size=12), "meta": json_values,
                                                                      "title": texts}), max_size=3) | json_values
filters = st.sampled_from([{"field": "docId", "op": "eq", "value": "fz-1"},
                           {"and": [{"field": "meta.year", "op": "gte", "value": 2000}]},
                           {"or": []}, {"field": "nope", "op": "eq", "value": 1}, {"not": {"field": "space"}}]) \
    | json_values
params = st.fixed_dictionaries({}, optional={
    "query": texts | json_values, "k": counts, "n": counts, "mode": st.sampled_from(["dense", "sparse", "hybrid",
                                                                                    "mmr"]) | json_values,
    "filter": filters, "minScore": st.floats(allow_nan=False, allow_infinity=False) | json_values,
    "tokenBudget": counts, "sessionId": st.sampled_from(["ses-nope"]) | json_values,
    "memoryId": st.sampled_from(["mem-nope"]) | json_values, "op": st.sampled_from(["local", "neighbors",
                                                                                   "global"]) | json_values,
    "seedIds": st.lists(st.text(max_size=30), max_size=3) | json_values, "hops": counts,
    "documents": documents, "ids": st.lists(st.text(max_size=12), max_size=3) | json_values,
    "scope": st.sampled_from(["global", "session", "planet"]) | json_values, "strict": json_values,
    "text": texts, "uid": texts, "customId": texts, "protocolVersion": counts, "nonce": json_values,
})
ids = st.integers(-2**53, 2**53) | st.text(max_size=12) | json_values
requests = st.fixed_dictionaries(
    {"method": st.sampled_from(METHODS) | st.text(max_size=16) | json_values},
    optional={"jsonrpc": st.sampled_from(["2.0", "2.0", "2.0", "1.0"]) | json_values, "id": ids,
              "params": params | json_values},
)
# Well-typed calls with random values reach the engine, not only the validators.
words = st.text(st.characters(codec="utf-8"), min_size=1, max_size=40)
plausible = st.one_of(
    st.fixed_dictionaries({"query": words}, optional={
        "k": st.integers(1, 300), "mode": st.sampled_from(["dense", "sparse", "hybrid"]), "filter": filters,
        "minScore": st.floats(-1, 1), "tokenBudget": st.integers(1, 5000), "strict": st.booleans(),
        "sessionId": st.just("ses-nope")}).map(lambda p: ("retrieve", p)),
    st.fixed_dictionaries({"query": words}, optional={
        "n": st.integers(1, 100), "k": st.integers(1, 200), "tokenBudget": st.integers(1, 5000)})
    .map(lambda p: ("memory/recall", p)),
    st.fixed_dictionaries({"op": st.sampled_from(["local", "neighbors"])}, optional={
        "query": words, "seedIds": st.lists(words, max_size=3), "k": st.integers(1, 500),
        "hops": st.integers(1, 3)}).map(lambda p: ("graph", p)),
    st.fixed_dictionaries({"documents": st.lists(st.fixed_dictionaries(
        {"text": words}, optional={"id": words, "meta": st.dictionaries(words, scalars, max_size=2)}),
        min_size=1, max_size=2)}).map(lambda p: ("index/add", p)),
    st.fixed_dictionaries({"ids": st.lists(words, max_size=3)}).map(lambda p: ("index/delete", p)),
    st.fixed_dictionaries({"text": words}, optional={"customId": words}).map(lambda p: ("x-hippo/remember", p)),
    st.fixed_dictionaries({"customId": words}, optional={"dryRun": st.booleans()})
    .map(lambda p: ("x-hippo/forget", p)),
).flatmap(lambda call: st.integers(1, 10**6).map(
    lambda i: {"jsonrpc": "2.0", "id": i, "method": call[0], "params": call[1]}))
messages = requests | plausible | st.lists(requests | plausible | json_values, min_size=0, max_size=5)


def _nest(depth: int, leaf: Any, inner: list[int]) -> Any:
    for i in range(depth):
        leaf = {"k": leaf} if inner[i % len(inner)] else [leaf]
    return leaf


# Values nested up to well past the limit (32), where user JSON goes: meta, props, filter, an echoed nonce.
deep = st.builds(_nest, st.integers(0, 120), json_values, st.lists(st.integers(0, 1), min_size=1, max_size=4))
deep_calls = st.one_of(
    deep.map(lambda v: ("index/add", {"documents": [{"text": "deep meta", "meta": {"m": v}}]})),
    deep.map(lambda v: ("memory/build", {"documents": [{"text": "deep meta", "meta": {"m": v}}]})),
    deep.map(lambda v: ("x-hippo/remember", {"text": "deep props", "props": {"p": v}})),
    deep.map(lambda v: ("retrieve", {"query": "deep", "filter": {"field": "meta.m", "op": "eq", "value": v}})),
    deep.map(lambda v: ("retrieve", {"query": "deep", "filter": v})),
    deep.map(lambda v: ("ping", {"nonce": v})),
).map(lambda call: {"jsonrpc": "2.0", "id": 1, "method": call[0], "params": call[1]})
header_text = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=40).map(str.strip)
headers = st.fixed_dictionaries({}, optional={
    "Content-Type": st.sampled_from(["application/json", "application/json; charset=utf-8", "APPLICATION/JSON",
                                     "text/plain", "text/plain; charset=utf-8", "application/x-www-form-urlencoded",
                                     "multipart/form-data; boundary=x", "application/json-patch+json", ""])
    | header_text,
    "Host": st.sampled_from(["127.0.0.1", "localhost", "[::1]", "evil.example", "127.0.0.1.evil.example", ""])
    | header_text,
    "Origin": st.sampled_from(["http://evil.example", "null", "http://127.0.0.1", "file://"]) | header_text,
    "Authorization": st.sampled_from(["Bearer", "Bearer hk_nope", "Basic YTpi"]) | header_text,
    "X-API-Key": header_text,
    "RCP-Session": header_text,
})
KEPT = {"customId": "fz-kept", "text": "The kept memory: the Quillon bell rings at noon."}


def _valid_id(value: Any) -> bool:
    return value is None or (isinstance(value, str | int | float) and not isinstance(value, bool))


def assert_valid_reply(reply: Any) -> None:
    assert isinstance(reply, dict), reply
    assert reply.get("jsonrpc") == "2.0", reply
    assert "id" in reply and _valid_id(reply["id"]), reply
    assert ("result" in reply) != ("error" in reply), reply
    if "error" in reply:
        error = reply["error"]
        assert isinstance(error, dict) and set(error) <= {"code", "message", "data"}, reply
        assert isinstance(error["code"], int) and not isinstance(error["code"], bool), reply
        assert isinstance(error["message"], str) and error["message"], reply
        assert error["code"] != -32603, reply  # an internal error is a bug the fuzzer found
    else:
        assert isinstance(reply["result"], dict), reply


def assert_answered(response: httpx.Response, sent: Any) -> None:
    if response.status_code == 204:
        assert response.content == b""
        return
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = json.loads(response.content)
    if isinstance(body, list):
        assert isinstance(sent, list) and body, body  # only a batch is answered with an array
        for reply in body:
            assert_valid_reply(reply)
    else:
        assert_valid_reply(body)


@pytest.fixture(scope="module")
def url(tmp_path_factory, embedder) -> Iterator[str]:
    corpus = json.loads((SAMPLE / "corpus.json").read_text(encoding="utf-8"))[:8]
    memory = Memory(SQLiteStore(tmp_path_factory.mktemp("fuzz") / "fuzz.db"),
                    settings=Settings(max_document_chars=5_000), embedder=embedder)
    service = Service(memory, ServerSettings(max_body_bytes=256 * 1024, threads=4))
    try:
        with background(service) as address:
            with httpx.Client(timeout=TIMEOUT) as http:
                http.post(address, json={"jsonrpc": "2.0", "id": 0, "method": "initialize",
                                         "params": {"protocolVersion": 1}}).raise_for_status()
                built = http.post(address, json={"jsonrpc": "2.0", "id": 1, "method": "memory/build",
                                                 "params": {"documents": corpus}}).json()
                assert "memoryId" in built["result"]
                kept = http.post(address, json={"jsonrpc": "2.0", "id": 2, "method": "x-hippo/remember",
                                                "params": KEPT}).json()
                assert kept["result"]["action"] == "inserted"
            yield address
    finally:
        service.close()


@pytest.fixture(scope="module")
def http() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=TIMEOUT) as client:
        yield client


def _alive(http: httpx.Client, url: str) -> None:
    pong = http.post(url, json={"jsonrpc": "2.0", "id": "alive", "method": "ping", "params": {"nonce": 1}})
    assert pong.json() == {"jsonrpc": "2.0", "id": "alive", "result": {"nonce": 1}}


@FUZZ
@given(message=messages | deep_calls)
def test_json_rpc_shaped_messages(url, http, message):
    response = http.post(url, content=json.dumps(message), headers={"Content-Type": "application/json"})
    assert_answered(response, message)


@FUZZ
@given(value=json_values | deep)
def test_arbitrary_json(url, http, value):
    response = http.post(url, content=json.dumps(value), headers={"Content-Type": "application/json"})
    assert_answered(response, value)


@settings(max_examples=80, deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=st.binary(max_size=300), path=st.sampled_from(["", "/ping", "/retrieve", "/index/add"]))
def test_arbitrary_bytes(url, http, body, path):
    response = http.post(url + path, content=body, headers={"Content-Type": "application/json"})
    assert_answered(response, None)


@settings(max_examples=150, deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(sent=headers, message=messages | deep_calls | json_values)
def test_random_headers_and_content_types(url, http, sent, message):
    response = http.post(url, content=json.dumps(message), headers=sent)
    if response.status_code in (200, 204):
        assert_answered(response, message)
        return
    assert response.status_code in (401, 403, 415, 421), (response.status_code, response.text)
    error = response.json()["error"]
    assert error["code"] in (-32600, -32012) and error["message"], error
    assert not any(h.lower().startswith("access-control-") for h in response.headers), "no CORS unless configured"


def test_the_server_still_serves_after_the_fuzzing_and_lost_nothing(url, http):
    _alive(http, url)
    recalled = http.post(url, json={"jsonrpc": "2.0", "id": 2, "method": "memory/recall",
                                    "params": {"query": "Who invented the tide-clock?", "n": 2}}).json()
    assert recalled["result"]["clues"] and recalled["result"]["hits"]
    versions = http.post(url, json={"jsonrpc": "2.0", "id": 3, "method": "x-hippo/history",
                                    "params": {"customId": KEPT["customId"]}}).json()["result"]["versions"]
    assert [(v["version"], v["state"], v["text"]) for v in versions] == [(1, "live", KEPT["text"])]
    found = http.post(url, json={"jsonrpc": "2.0", "id": 4, "method": "retrieve",
                                 "params": {"query": "Quillon bell noon", "mode": "sparse", "k": 1}}).json()
    assert found["result"]["hits"][0]["text"] == KEPT["text"]
