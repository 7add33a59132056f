"""The RCP server over a real socket (uvicorn, in a thread) and over stdio (``hippo serve --stdio``),
driven with the ``rcp`` SDK client: every method and every error path."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest
import rcp
from rcp import Errc, RcpError

from hippo import Memory, Settings
from hippo.datasets import SAMPLE
from hippo.server import Service
from hippo.server.coalesce import CoalescingEmbedder
from hippo.server.config import ServerSettings
from hippo.server.http import background
from hippo.store import SQLiteStore
from hippo.text import approx_tokens

REPO = Path(__file__).resolve().parent.parent
MAX_DOCUMENT_CHARS = 20_000
MAX_BODY = 512 * 1024
GRETA = "Who governs the island on which the painter Greta Südhof was born?"


def _corpus() -> list[dict]:
    corpus = json.loads((SAMPLE / "corpus.json").read_text(encoding="utf-8"))
    return [{"id": f"sample-{i:02d}", "title": c["title"], "text": c["text"]} for i, c in enumerate(corpus)]


def _service(path: Path, embedder) -> Service:
    memory = Memory(SQLiteStore(path), settings=Settings(max_document_chars=MAX_DOCUMENT_CHARS),
                    embedder=CoalescingEmbedder(embedder))
    return Service(memory, ServerSettings(max_body_bytes=MAX_BODY, max_documents=100, threads=4))


@pytest.fixture(scope="module")
def store_path(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("rcp") / "rcp.db"


@pytest.fixture(scope="module")
def service(store_path, embedder) -> Iterator[Service]:
    svc = _service(store_path, embedder)
    yield svc
    svc.close()


@pytest.fixture(scope="module")
def url(service) -> Iterator[str]:
    with background(service) as address:
        yield address


def connect(url: str) -> rcp.Client:
    """The SDK's HTTP client, with room for a busy machine (its default timeout is 30 s)."""
    client = rcp.Client()
    client._transport = rcp.HttpTransport(url, timeout=300)
    client._handshake()
    return client


@pytest.fixture(scope="module")
def client(url) -> rcp.Client:
    return connect(url)


@pytest.fixture(scope="module")
def built(client) -> dict:
    """The sample corpus (54 passages) built into a global memory, over the protocol."""
    return client.memory_build(documents=_corpus(), scope="global")


def post(url: str, body: bytes | str, path: str = "", headers: dict | None = None) -> httpx.Response:
    return httpx.post(url + path, content=body, headers={"Content-Type": "application/json", **(headers or {})},
                      timeout=60)


def error_of(call) -> RcpError:
    with pytest.raises(RcpError) as raised:
        call()
    return raised.value


# -- handshake --------------------------------------------------------------------------


def test_initialize_advertises_what_the_server_does(client):
    caps = client.capabilities
    assert client.server["name"] == "hippo" and client.protocol_version == 1
    assert caps["memory"]["scopes"] == ["global", "session"] and caps["memory"]["clues"] is True
    assert set(caps["retrieve"]["modes"]) == {"dense", "sparse", "hybrid"}
    assert caps["graph"]["ops"] == ["local", "neighbors"] and caps["index"]["writable"] is True
    assert "session" in caps and "citations" in caps and "filter" in caps
    assert "x-hippo/remember" in caps["x-hippo"]["methods"]
    info = client.info()
    assert info["_meta"]["conformance"] == "L2" and info["capabilities"] == caps
    assert client.ping(nonce="n-1") == {"nonce": "n-1"} and client.ping(nonce=7) == {"nonce": 7}


def test_http_calls_before_initialize_are_refused_until_a_handshake(service, built):
    with background(service) as fresh:  # a new app: nobody has initialized yet
        raw = rcp.HttpTransport(fresh, timeout=300)
        assert raw.call({"jsonrpc": "2.0", "id": 1, "method": "info"})["result"]["server"]["name"] == "hippo"
        assert raw.call({"jsonrpc": "2.0", "id": 2, "method": "ping", "params": {"nonce": 3}})["result"] == \
            {"nonce": 3}
        refused = raw.call({"jsonrpc": "2.0", "id": 3, "method": "retrieve", "params": {"query": "x", "k": 1}})
        assert refused["error"]["code"] == Errc.NOT_INITIALIZED
        second = connect(fresh)  # the SDK client initializes, then may call
        assert len(second.retrieve("tide-clock", k=1)) == 1
        token = raw.call({"jsonrpc": "2.0", "id": 4, "method": "initialize",
                          "params": {"protocolVersion": 1}})["result"]["_meta"]["session"]
        stale = post(fresh, json.dumps({"jsonrpc": "2.0", "id": 5, "method": "retrieve",
                                        "params": {"query": "x", "k": 1}}), headers={"RCP-Session": "forged"})
        assert stale.json()["error"]["code"] == Errc.NOT_INITIALIZED
        good = post(fresh, json.dumps({"jsonrpc": "2.0", "id": 6, "method": "ping"}),
                    headers={"RCP-Session": token})
        assert good.json()["result"] == {}
        with_token = post(fresh, json.dumps({"jsonrpc": "2.0", "id": 7, "method": "retrieve",
                                             "params": {"query": "tide-clock", "k": 1}}),
                          headers={"RCP-Session": token})
        assert len(with_token.json()["result"]["hits"]) == 1


def test_initialize_with_no_common_version_is_refused(url):
    reply = rcp.HttpTransport(url).call({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                         "params": {"protocolVersion": 0}})
    assert reply["error"]["code"] == Errc.VERSION_MISMATCH


# -- memory/build and memory/recall -----------------------------------------------------------


def test_build_reports_the_memory_size_in_tokens_of_its_entities_and_facts(built, store_path):
    assert built["memoryId"].startswith("mem-") and built["_meta"]["passagesAdded"] == 54
    space = f"memory:{built['memoryId']}"
    with sqlite3.connect(store_path) as db:  # counted independently of the server's code
        names = [r[0] for r in db.execute(
            "SELECT name FROM entities WHERE id IN (SELECT m.entity_id FROM mentions m JOIN passages p "
            "ON p.id = m.passage_id WHERE p.space = ? AND p.forgotten_at IS NULL)", (space,))]
        facts = [f"{s} {p} {o}" for s, p, o in db.execute(
            "SELECT f.subject, f.predicate, f.object FROM facts f JOIN passages p ON p.id = f.passage_id "
            "WHERE p.space = ? AND p.forgotten_at IS NULL", (space,))]
    assert built["_meta"]["entities"] == len(names) and built["_meta"]["facts"] == len(facts)
    assert built["tokens"] == sum(map(approx_tokens, names)) + sum(map(approx_tokens, facts)) > 1000


def test_recall_gives_clues_whose_seeds_the_graph_method_accepts(client, built):
    recalled = client.memory_recall(GRETA, memory_id=built["memoryId"], n=4)
    clues = recalled["clues"]
    assert 1 <= len(clues) <= 4
    assert all(set(c) >= {"weight"} and ("query" in c or "seedIds" in c) for c in clues)
    seeds = [s for c in clues for s in c.get("seedIds", [])]
    assert seeds and all(s.startswith("entity:") for s in seeds)
    assert recalled["_meta"]["strategy"] == "graph" and recalled["_meta"]["memoryId"] == built["memoryId"]
    titles = [h["meta"]["title"] for h in recalled["hits"][:5]]
    assert "Greta Südhof" in titles
    hit = recalled["hits"][0]
    assert hit["unit"] == "passage" and 0 <= hit["confidence"] <= 1 and hit["citation"]["title"]
    # Documents built into a memory live in its space, and their ids are owned by it (hippo.spaces).
    assert hit["chunk"]["docId"].startswith(f"memory:{built['memoryId']}/sample-") and hit["provenance"]["nodes"]

    local = client.graph("local", {"seedIds": seeds, "k": 3})
    assert 1 <= len(local["hits"]) <= 3
    assert all(h["provenance"]["nodes"][0] in seeds for h in local["hits"])  # the seed it came from first
    around = client.graph("neighbors", {"seedIds": seeds[:2], "k": 12})
    ids = {n["id"] for n in around["nodes"]}
    assert set(seeds[:2]) <= ids and len(ids) <= 12
    assert around["edges"] and all(e["src"] in ids and e["dst"] in ids and e["weight"] > 0
                                   for e in around["edges"])
    surrogate = next(c["query"] for c in clues if c.get("query"))
    assert client.retrieve(surrogate, k=2)


def test_recall_respects_n_and_k_and_the_token_budget(client, built):
    result = client.call("memory/recall", {"query": GRETA, "memoryId": built["memoryId"], "n": 1, "k": 2})
    assert len(result["clues"]) == 1 and len(result["hits"]) == 2
    budgeted = client.call("memory/recall", {"query": GRETA, "memoryId": built["memoryId"], "tokenBudget": 150})
    assert sum(approx_tokens(h["text"]) for h in budgeted["hits"]) <= 150


def test_graph_local_with_a_query_and_unknown_seeds(client, built):
    by_query = client.graph("local", {"query": GRETA, "k": 2})
    assert len(by_query["hits"]) == 2 and by_query["_meta"]["strategy"] == "graph"
    nothing = client.graph("local", {"seedIds": ["entity:does-not-exist"], "k": 2})
    assert nothing["hits"] == []  # an unknown (or hidden) id is never confirmed: empty, not an error
    assert error_of(lambda: client.graph("global", {"query": "x"})).code == Errc.OPTION_UNSUPPORTED
    missing = error_of(lambda: client.graph("local", {"k": 2}))
    assert missing.code == Errc.INVALID_PARAMS and missing.data["field"] == "seedIds"
    hops = error_of(lambda: client.graph("neighbors", {"seedIds": ["x"], "hops": 9}))
    assert hops.code == Errc.INVALID_PARAMS and hops.data == {"field": "hops", "limit": 3}


def test_rebuilding_a_memory_by_id_is_incremental(client, built):
    again = client.memory_build(memory_id=built["memoryId"])
    assert again["memoryId"] == built["memoryId"] and again["tokens"] == built["tokens"]
    grown = client.memory_build(memory_id=built["memoryId"], documents=[
        {"id": "extra-1", "text": "The Quillon Observatory was founded by Greta Südhof's pupil Anwen Roke."}])
    assert grown["tokens"] > built["tokens"] and grown["_meta"]["passagesAdded"] == 1
    hits = client.memory_recall("Who founded the Quillon Observatory?", memory_id=built["memoryId"])["hits"]
    assert hits[0]["chunk"]["docId"] == f"memory:{built['memoryId']}/extra-1"


def test_sessions_scope_memory_and_never_return_a_passage_twice(client, built):
    session = client.memory_build(scope="session", documents=[
        {"id": "note-1", "text": "In this trip the traveller lost her compass at the Caldra harbour."}])
    sid = session["sessionId"]
    assert sid.startswith("ses-") and session["memoryId"] != built["memoryId"]
    outside = client.retrieve("lost compass Caldra harbour", k=5, opts={"mode": "sparse"})
    assert all(not h["chunk"]["docId"].endswith("/note-1") for h in outside)  # session passages stay in it
    inside = client.retrieve("lost compass Caldra harbour", k=5, opts={"mode": "sparse", "sessionId": sid})
    assert inside[0]["chunk"]["docId"] == f"session:{sid}/note-1"

    first = client.memory_recall(GRETA, memory_id=built["memoryId"], session_id=sid)["hits"]
    second = client.memory_recall(GRETA, memory_id=built["memoryId"], session_id=sid)["hits"]
    assert first and second and not {h["id"] for h in first} & {h["id"] for h in second}
    again = client.retrieve("Greta Südhof painter", k=3, opts={"sessionId": sid})
    assert not {h["id"] for h in again} & {h["id"] for h in first + second + inside}

    assert error_of(lambda: client.memory_recall("x", session_id="ses-unknown")).code == Errc.NOT_FOUND
    assert error_of(lambda: client.retrieve("x", opts={"sessionId": "ses-unknown"})).code == Errc.NOT_FOUND
    assert error_of(lambda: client.memory_recall("x", memory_id="mem-unknown")).code == Errc.NOT_FOUND
    assert error_of(lambda: client.memory_build(memory_id="mem-unknown")).code == Errc.NOT_FOUND


def test_recall_before_any_memory_exists_is_the_query_itself(tmp_path, embedder):
    empty = _service(tmp_path / "empty.db", embedder)
    try:
        with background(empty) as address:
            result = connect(address).memory_recall("Where is the tide-clock kept?", n=3)
    finally:
        empty.close()
    assert result["clues"] == [{"query": "Where is the tide-clock kept?", "weight": 1.0, "x-hippo-kind": "query"}]
    assert result["hits"] == [] and result["_meta"]["strategy"] == "no_memory"


# -- retrieve ------------------------------------------------------------------------------


def test_retrieve_modes_k_and_min_score(client, built):
    for mode, stage in (("dense", "dense"), ("sparse", "sparse"), ("hybrid", "rrf")):
        hits = client.retrieve("Who invented the tide-clock?", k=3, opts={"mode": mode})
        assert len(hits) == 3, mode
        assert hits[0]["meta"]["title"] == "Tide-clock", mode
        assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
        assert all(stage in h["scores"] for h in hits)
    dense = client.retrieve("Who invented the tide-clock?", k=10, opts={"mode": "dense"})
    floor = dense[3]["score"]
    kept = client.retrieve("Who invented the tide-clock?", k=10, opts={"mode": "dense", "minScore": floor})
    assert len(kept) == 4 and all(h["score"] >= floor for h in kept)


def test_retrieve_clamps_k_to_max_k_and_says_so(client, built):
    result = client.search("island", k=5000)
    assert len(result["hits"]) <= client.capabilities["retrieve"]["maxK"]
    assert any("clamped" in note for note in result["usage"]["notes"])


def test_retrieve_filters_on_document_metadata(client, built):
    client.index_add({"documents": [
        {"id": "meta-a", "text": "The brass orrery of Caldry was restored in 1998.", "meta": {"year": 1998,
                                                                                             "lang": "en"}},
        {"id": "meta-b", "text": "The brass orrery of Skjelvik was restored in 2011.", "meta": {"year": 2011,
                                                                                               "lang": "en"}},
    ]})
    recent = client.retrieve("brass orrery restored", k=5, opts={
        "filter": {"and": [{"field": "meta.year", "op": "gte", "value": 2000},
                           {"field": "meta.lang", "op": "eq", "value": "en"}]}})
    assert [h["chunk"]["docId"] for h in recent] == ["meta-b"]
    by_id = client.retrieve("brass orrery restored", k=5, opts={
        "filter": {"field": "docId", "op": "in", "value": ["meta-a"]}})
    assert [h["meta"]["year"] for h in by_id] == [1998]
    bad = error_of(lambda: client.retrieve("x", opts={"filter": {"field": "colour", "op": "eq", "value": 1}}))
    assert bad.code == Errc.INVALID_PARAMS and bad.data["field"] == "filter.field"
    empty = error_of(lambda: client.retrieve("x", opts={"filter": {"and": []}}))
    assert empty.code == Errc.INVALID_PARAMS and empty.data["field"] == "filter.and"


def test_retrieve_options_it_does_not_do_are_refused_unless_not_strict(client, built):
    mode = error_of(lambda: client.retrieve("x", opts={"mode": "colbert"}))
    assert mode.code == Errc.OPTION_UNSUPPORTED and mode.data["option"] == "mode"
    mmr = error_of(lambda: client.retrieve("x", opts={"mmr": {"lambda": 0.5}}))
    assert mmr.code == Errc.OPTION_UNSUPPORTED and mmr.data["option"] == "mmr"
    lenient = client.search("tide-clock", k=2, opts={"mode": "colbert", "mmr": {"lambda": 0.5}, "strict": False})
    assert len(lenient["hits"]) == 2 and len(lenient["usage"]["notes"]) == 2
    budget = client.retrieve("island", k=20, opts={"tokenBudget": 200})
    assert budget and sum(approx_tokens(h["text"]) for h in budget) <= 200


# -- index ---------------------------------------------------------------------------------


def test_index_add_upserts_on_explicit_ids_and_delete_is_idempotent(client, built):
    first = client.index_add({"documents": [{"id": "ver-1", "text": "The Harrow bell was cast by Ilse Brand."}]})
    assert first["ids"] == ["ver-1"]
    client.index_add({"documents": [{"id": "ver-1", "text": "The Harrow bell was cast by Petra Lund."}]})
    texts = [h["text"] for h in client.retrieve("Harrow bell cast", k=5, opts={"mode": "sparse"})]
    assert "The Harrow bell was cast by Petra Lund." in texts
    assert "The Harrow bell was cast by Ilse Brand." not in texts  # replaced, never duplicated
    derived = client.index_add({"documents": [{"text": "An anonymous note about the Harrow bell tower."}]})
    assert derived["ids"][0].startswith("doc:")
    assert client.index_delete({"ids": ["ver-1", "never-there"]}) == {"deleted": 1}
    assert client.index_delete({"ids": ["ver-1"]}) == {"deleted": 0}
    assert all("Petra" not in h["text"] for h in client.retrieve("Harrow bell cast", k=5, opts={"mode": "sparse"}))


def test_remember_forget_restore_extensions(client, built):
    stored = client.call("x-hippo/remember", {"text": "Odile prefers the night ferry to Morrowen.",
                                              "customId": "odile-ferry"})
    assert stored["action"] == "inserted" and stored["searchable"] == {"bm25": True, "vector": True}
    found = client.retrieve("Odile night ferry", k=1, opts={"mode": "sparse"})
    assert found[0]["text"] == "Odile prefers the night ferry to Morrowen."
    preview = client.call("x-hippo/forget", {"customId": "odile-ferry", "dryRun": True})
    assert preview["dryRun"] is True and preview["passages"]
    gone = client.call("x-hippo/forget", {"customId": "odile-ferry", "reason": "user asked"})
    assert gone["undo"] == {"method": "restore", "uid": stored["uid"]}
    assert all("Odile prefers" not in h["text"] for h in client.retrieve("Odile night ferry", k=3))
    twice = error_of(lambda: client.call("x-hippo/forget", {"customId": "odile-ferry"}))
    assert twice.code == Errc.CONFLICT and twice.data["code"] == "already_forgotten"
    client.call("x-hippo/restore", {"uid": stored["uid"]})
    assert [v["text"] for v in client.call("x-hippo/history", {"customId": "odile-ferry"})["versions"]] == \
        ["Odile prefers the night ferry to Morrowen."]
    listed = client.call("x-hippo/memories", {"limit": 50})["memories"]
    assert "odile-ferry" in [m["customId"] for m in listed]
    back = client.retrieve("Odile night ferry", k=1, opts={"mode": "sparse"})
    assert back[0]["text"] == "Odile prefers the night ferry to Morrowen."
    assert error_of(lambda: client.call("x-hippo/forget", {"uid": "memory:nope"})).code == Errc.NOT_FOUND
    assert error_of(lambda: client.call("x-hippo/forget", {})).data["field"] == "uid"


# -- errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("method", "params", "code", "field"), [
    ("retrieve", {"query": "x", "k": "5"}, Errc.INVALID_PARAMS, "k"),
    ("retrieve", {"query": "x", "k": 0}, Errc.INVALID_PARAMS, "k"),
    ("retrieve", {"query": "x", "k": 2.5}, Errc.INVALID_PARAMS, "k"),
    ("retrieve", {"k": 3}, Errc.INVALID_PARAMS, "query"),
    ("retrieve", {"query": "   "}, Errc.INVALID_PARAMS, "query"),
    ("retrieve", {"query": 42}, Errc.INVALID_PARAMS, "query"),
    ("retrieve", {"query": "x", "strict": "yes"}, Errc.INVALID_PARAMS, "strict"),
    ("retrieve", {"query": "x", "k": 10, "candidateK": 2}, Errc.INVALID_PARAMS, "candidateK"),
    ("memory/recall", {"query": "x", "n": 0}, Errc.INVALID_PARAMS, "n"),
    ("memory/recall", {"query": "x", "n": 101}, Errc.INVALID_PARAMS, "n"),
    ("memory/recall", {"query": "x", "k": 201}, Errc.INVALID_PARAMS, "k"),
    ("memory/recall", {}, Errc.INVALID_PARAMS, "query"),
    ("memory/build", {"scope": "planet"}, Errc.INVALID_PARAMS, "scope"),
    ("graph", {"op": "local", "seedIds": "entity:x"}, Errc.INVALID_PARAMS, "seedIds"),
    ("graph", {"op": "local", "query": "x", "k": 501}, Errc.INVALID_PARAMS, "k"),
    ("index/add", {"documents": [{"id": "a", "text": "ok"}, {"id": "b"}]}, Errc.INVALID_PARAMS,
     "documents[1].text"),
    ("index/add", {"documents": [{"text": ""}]}, Errc.INVALID_PARAMS, "documents[0].text"),
    ("index/add", {"documents": [{"text": "x" * (MAX_DOCUMENT_CHARS + 1)}]}, Errc.PAYLOAD_TOO_LARGE,
     "documents[0].text"),
    ("index/add", {"documents": [{"text": f"doc {i}"} for i in range(101)]}, Errc.PAYLOAD_TOO_LARGE, "documents"),
    ("index/delete", {"ids": "ver-1"}, Errc.INVALID_PARAMS, "ids"),
    ("memory/build", {"documents": [{"text": "x" * (MAX_DOCUMENT_CHARS + 1)}]}, Errc.PAYLOAD_TOO_LARGE,
     "documents[0].text"),
])
def test_bad_params_get_the_spec_code_and_name_the_field(client, method, params, code, field):
    error = error_of(lambda: client.call(method, params))
    assert error.code == code
    assert error.data["field"] == field and field in error.message


def test_limits_are_reported_with_the_error(client):
    n = error_of(lambda: client.call("memory/recall", {"query": "x", "n": 101}))
    assert n.data == {"field": "n", "limit": 100}
    big = error_of(lambda: client.call("index/add", {"documents": [{"text": "x" * (MAX_DOCUMENT_CHARS + 1)}]}))
    assert big.data["limit"] == MAX_DOCUMENT_CHARS and str(MAX_DOCUMENT_CHARS) in big.message


def test_a_failed_write_loses_nothing(client, built):
    before = client.retrieve("Who invented the tide-clock?", k=3)
    bad = [{"id": "ok-doc", "text": "A fine passage about kelp."}, {"id": "bad-doc", "text": "   "}]
    assert error_of(lambda: client.index_add({"documents": bad})).code == Errc.INVALID_PARAMS
    assert client.retrieve("Who invented the tide-clock?", k=3) == before
    assert all(h["chunk"]["docId"] != "ok-doc" for h in client.retrieve("fine passage kelp", k=5))


def test_unknown_and_ungated_methods(client):
    assert error_of(lambda: client.call("frobnicate", {})).code == Errc.UNKNOWN_METHOD
    assert error_of(lambda: client.call("x-hippo/teleport", {})).code == Errc.UNKNOWN_METHOD
    assert error_of(lambda: client.call("rerank", {"query": "x", "passages": ["a"]})).code == \
        Errc.CAPABILITY_MISSING


def test_wire_level_errors(url, client):
    malformed = post(url, b'{"jsonrpc": "2.0", "id": 1, "method": ')
    assert malformed.status_code == 200 and malformed.json()["error"]["code"] == Errc.PARSE_ERROR
    assert malformed.json()["id"] is None
    deep = post(url, b"[" * 50_000 + b"]" * 50_000)
    assert deep.json()["error"]["code"] == Errc.PARSE_ERROR
    assert post(url, b"\xff\xfe{").json()["error"]["code"] == Errc.PARSE_ERROR
    assert post(url, b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"nonce":NaN}}').json()["error"][
        "code"] == Errc.PARSE_ERROR
    assert post(url, b"[]").json()["error"]["code"] == Errc.INVALID_REQUEST
    assert post(url, b'"ping"').json()["error"]["code"] == Errc.INVALID_REQUEST
    bad_id = post(url, json.dumps({"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"})).json()
    assert bad_id["error"]["code"] == Errc.INVALID_REQUEST and bad_id["id"] is None
    version = post(url, json.dumps({"jsonrpc": "1.0", "id": 9, "method": "ping"})).json()
    assert version["error"]["code"] == Errc.INVALID_REQUEST and version["id"] == 9
    positional = post(url, json.dumps({"jsonrpc": "2.0", "id": 2, "method": "retrieve", "params": ["x", 3]}))
    assert positional.json()["error"] == {"code": Errc.INVALID_PARAMS, "message": "params must be an object, "
                                          "got list", "data": {"field": "params"}}
    surrogate = post(url, b'{"jsonrpc":"2.0","id":3,"method":"retrieve","params":{"query":"a\\ud800b"}}')
    assert surrogate.json()["error"]["data"]["field"] == "query"
    mismatch = post(url, json.dumps({"jsonrpc": "2.0", "id": 4, "method": "ping"}), path="/retrieve")
    assert mismatch.json()["error"]["code"] == Errc.INVALID_REQUEST
    notification = post(url, json.dumps({"jsonrpc": "2.0", "method": "retrieve", "params": {"query": "x"}}))
    assert notification.status_code == 204 and notification.content == b""
    too_big = post(url, b'{"jsonrpc":"2.0","id":5,"method":"index/add","params":{"documents":[{"text":"'
                   + b"y" * MAX_BODY + b'"}]}}')
    assert too_big.json()["error"]["code"] == Errc.PAYLOAD_TOO_LARGE
    assert too_big.json()["error"]["data"] == {"field": "body", "limit": MAX_BODY}
    assert httpx.get(url, timeout=10).status_code == 405
    assert httpx.post(url.replace("/rcp", "/elsewhere"), content=b"{}", timeout=10,
                      headers={"Content-Type": "application/json"}).status_code == 404


def test_batches_answer_every_request_and_no_notification(url, client, built):
    batch = [
        {"jsonrpc": "2.0", "id": "a", "method": "ping", "params": {"nonce": 1}},
        {"jsonrpc": "2.0", "id": "b", "method": "retrieve", "params": {"query": "tide-clock", "k": 1}},
        {"jsonrpc": "2.0", "method": "ping"},
        {"jsonrpc": "2.0", "id": "c", "method": "memory/recall", "params": {"query": "x", "n": 0}},
        {"jsonrpc": "2.0", "id": "d", "method": "nope"},
        7,
    ]
    replies = post(url, json.dumps(batch)).json()
    by_id = {r["id"]: r for r in replies}
    assert len(replies) == 5 and set(by_id) == {"a", "b", "c", "d", None}
    assert by_id["a"]["result"] == {"nonce": 1} and len(by_id["b"]["result"]["hits"]) == 1
    assert by_id["c"]["error"]["code"] == Errc.INVALID_PARAMS and by_id["d"]["error"]["code"] == Errc.UNKNOWN_METHOD
    assert by_id[None]["error"]["code"] == Errc.INVALID_REQUEST
    only_notifications = post(url, json.dumps([{"jsonrpc": "2.0", "method": "ping"}] * 3))
    assert only_notifications.status_code == 204
    too_many = post(url, json.dumps([{"jsonrpc": "2.0", "id": i, "method": "ping"} for i in range(65)])).json()
    assert too_many["error"]["code"] == Errc.INVALID_PARAMS and too_many["error"]["data"]["limit"] == 64


# -- embedding coalescing -------------------------------------------------------------------


class _Gated:
    """An embedder whose first call waits until every caller has queued, so batching is deterministic."""

    def __init__(self, inner, callers: int) -> None:
        self.inner, self.name, self.dim = inner, inner.name, inner.dim
        self.calls: list[int] = []
        self.queued = threading.Barrier(callers + 1)
        self.fail = False

    def encode(self, texts):
        if not self.calls:
            self.queued.wait(timeout=30)  # the test releases once all callers are in
            time.sleep(0.2)
        self.calls.append(len(texts))
        if self.fail:
            raise RuntimeError("model fell over")
        return self.inner.encode(texts)


def test_concurrent_queries_are_embedded_as_one_batch_with_the_same_vectors(embedder):
    gated = _Gated(embedder, callers=12)
    coalescing = CoalescingEmbedder(gated)
    texts = [[f"who built lighthouse number {i}?", f"lighthouse {i}"] for i in range(12)]
    out: dict[int, np.ndarray] = {}

    def call(i: int) -> None:
        gated.queued.wait(timeout=30) if i else None
        out[i] = coalescing.encode(texts[i])

    threads = [threading.Thread(target=call, args=(i,)) for i in range(12)]
    threads[0].start()
    time.sleep(0.2)  # caller 0 holds the model; the others queue behind it
    for t in threads[1:]:
        t.start()
    gated.queued.wait(timeout=30)
    for t in threads:
        t.join(timeout=60)
    assert gated.calls == [2, 22]  # caller 0 alone, then the eleven queued callers in one batch
    for i in range(12):
        np.testing.assert_allclose(out[i], embedder.encode(texts[i]), atol=1e-5)

    gated.fail = True
    with pytest.raises(RuntimeError, match="fell over"):
        coalescing.encode(["anything"])


# -- stdio -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def stdio_server(store_path, built) -> Iterator[subprocess.Popen]:
    """``hippo serve --stdio`` on the store the HTTP server built (a second process on one SQLite file)."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HIPPO_MAX_DOCUMENT_CHARS": str(MAX_DOCUMENT_CHARS),
           "HIPPO_SERVER_MAX_BODY_BYTES": str(MAX_BODY)}
    proc = subprocess.Popen([sys.executable, "-m", "hippo.cli", "serve", "--stdio", "--store", str(store_path)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO,
                            env=env)
    yield proc
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=30)


def _line(proc: subprocess.Popen, data: bytes) -> dict:
    proc.stdin.write(data + b"\n")
    proc.stdin.flush()
    return json.loads(proc.stdout.readline())


def test_stdio_serves_every_method_with_the_sdk_client(stdio_server, built):
    proc = stdio_server
    # Raw lines first: the handshake has not happened yet.
    assert _line(proc, b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"nonce":"x"}}')["result"] == \
        {"nonce": "x"}
    early = _line(proc, b'{"jsonrpc":"2.0","id":2,"method":"memory/recall","params":{"query":"x"}}')
    assert early["error"]["code"] == Errc.NOT_INITIALIZED
    assert _line(proc, b'{"jsonrpc":"2.0","id":3,"method":')["error"]["code"] == Errc.PARSE_ERROR
    proc.stdin.write(b"\n")  # blank lines are tolerated
    too_long = _line(proc, b'{"text":"' + b"z" * MAX_BODY + b'"}')
    assert too_long["error"]["code"] == Errc.PAYLOAD_TOO_LARGE and too_long["error"]["data"]["limit"] == MAX_BODY

    client = rcp.Client()
    client._transport = rcp.StdioTransport(proc)  # the SDK client on this already-running server
    client._handshake()
    assert client.capabilities["memory"]["clues"] is True
    assert error_of(lambda: client.call("initialize", {"protocolVersion": 1})).code == Errc.INVALID_REQUEST

    recalled = client.memory_recall(GRETA, memory_id=built["memoryId"], n=3)  # built by the HTTP server
    seeds = [s for c in recalled["clues"] for s in c.get("seedIds", [])]
    assert seeds and "Greta Südhof" in [h["meta"]["title"] for h in recalled["hits"]]
    assert client.graph("local", {"seedIds": seeds, "k": 2})["hits"]
    assert client.graph("neighbors", {"seedIds": seeds[:1], "k": 5})["nodes"][0]["seed"] is True
    assert client.retrieve("tide-clock", k=2, opts={"mode": "dense"})[0]["meta"]["title"] == "Tide-clock"

    session = client.memory_build(scope="session", documents=[{"id": "stdio-1", "text":
                                                                "The stdio courier reached Brennhafen at dawn."}])
    recall = client.memory_recall("When did the courier reach Brennhafen?", session_id=session["sessionId"])
    assert recall["hits"][0]["chunk"]["docId"] == f"session:{session['sessionId']}/stdio-1"
    assert client.index_add({"documents": [{"id": "stdio-2", "text": "A stdio-only passage."}]})["ids"] == \
        ["stdio-2"]
    assert client.index_delete({"ids": ["stdio-2"]}) == {"deleted": 1}
    assert client.call("x-hippo/remember", {"text": "stdio remembers this."})["action"] == "inserted"

    assert error_of(lambda: client.call("retrieve", {"query": "x", "k": "3"})).data["field"] == "k"
    assert error_of(lambda: client.memory_recall("x", memory_id="mem-nope")).code == Errc.NOT_FOUND
    assert error_of(lambda: client.call("nope", {})).code == Errc.UNKNOWN_METHOD
    big = error_of(lambda: client.index_add({"documents": [{"text": "x" * (MAX_DOCUMENT_CHARS + 1)}]}))
    assert big.code == Errc.PAYLOAD_TOO_LARGE and big.data["field"] == "documents[0].text"
    meta: dict = {}
    for _ in range(600):  # once stored, and then every read of it broke, and the stdio server exited
        meta = {"a": meta}
    deep = error_of(lambda: client.index_add({"documents": [{"text": "A deep one.", "meta": meta}]}))
    assert deep.code == Errc.INVALID_PARAMS and deep.data == {"field": "documents[0].meta", "limit": 32}
    batch = _line(proc, json.dumps([{"jsonrpc": "2.0", "id": 10, "method": "ping"},
                                    {"jsonrpc": "2.0", "method": "ping"},
                                    {"jsonrpc": "2.0", "id": 11, "method": "retrieve", "params": {"k": 1}}]).encode())
    assert [r["id"] for r in batch] == [10, 11] and batch[1]["error"]["data"]["field"] == "query"

    assert _line(proc, b'{"jsonrpc":"2.0","id":12,"method":"shutdown"}') == {"jsonrpc": "2.0", "id": 12,
                                                                            "result": {}}
    assert proc.wait(timeout=30) == 0  # answered, then the process exits on its own
    assert b"Traceback" not in proc.stderr.read()
