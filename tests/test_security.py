"""Secure by default (issue 12): every attack that once worked, replayed.

The RCP server runs on a real socket (uvicorn in a thread) over a store whose
API keys were issued into it (``KeyRing.issue``): ``alice`` and ``bob`` are
users, ``root`` is an admin. The CLI is run as a subprocess. Each test names
the defect it replays.
"""

from __future__ import annotations

import io
import json
import logging
import os
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import anyio
import httpx
import pytest

from hippo import Memory
from hippo.access import Grant, ScopedMemory, admin_principal, derive_principal
from hippo.datasets import SAMPLE
from hippo.errors import InvalidInput
from hippo.keys import KEY_NAMESPACE, KeyRing, key_hash
from hippo.memory.inputs import memory_uid
from hippo.server import Service, handlers
from hippo.server import filters as rcp_filters
from hippo.server import stdio as stdio_transport
from hippo.server.config import ServerSettings
from hippo.server.guard import exposure_refusal
from hippo.server.http import background
from hippo.server.memories import LEGACY_INDEX, NAMESPACE, MemoryRecord, MemoryRegistry, latest_key
from hippo.spaces import check_space
from hippo.store import SQLiteStore

REPO = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "200", "TOKENIZERS_PARALLELISM": "false"}
MISSING_MEMORY = "memory:00000000000000000000"


def _corpus(n: int = 8) -> list[dict[str, Any]]:
    corpus = json.loads((SAMPLE / "corpus.json").read_text(encoding="utf-8"))[:n]
    return [{"id": f"org-{i}", "title": c["title"], "text": c["text"]} for i, c in enumerate(corpus)]


class Caller:
    """One API key over HTTP: raw JSON-RPC, so status codes and headers stay visible."""

    def __init__(self, url: str, key: str | None) -> None:
        self.url, self.key, self._ids = url, key, iter(range(1, 10**9))

    def post(self, body: Any, *, headers: dict[str, str] | None = None, raw: bytes | None = None) -> httpx.Response:
        sent = {"Content-Type": "application/json", **({"X-API-Key": self.key} if self.key else {}), **(headers or {})}
        return httpx.post(self.url, content=raw if raw is not None else json.dumps(body), headers=sent, timeout=300)

    def call(self, method: str, params: dict | None = None, **options: Any) -> dict[str, Any]:
        return self.post({"jsonrpc": "2.0", "id": next(self._ids), "method": method, "params": params or {}},
                         **options).json()

    def result(self, method: str, params: dict | None = None) -> Any:
        reply = self.call(method, params)
        assert "result" in reply, reply
        return reply["result"]

    def error(self, method: str, params: dict | None = None) -> dict[str, Any]:
        reply = self.call(method, params)
        assert "error" in reply, reply
        return reply["error"]


class World:
    def __init__(self, memory: Memory, service: Service, url: str, keys: dict[str, str]) -> None:
        self.memory, self.service, self.url, self.keys = memory, service, url, keys
        self.alice, self.bob, self.root = (Caller(url, keys[u]) for u in ("alice", "bob", "root"))
        for caller in (self.alice, self.bob, self.root):
            caller.result("initialize", {"protocolVersion": 1})

    def revision(self) -> int:
        return self.memory.store.revision()


@pytest.fixture(scope="module")
def world(embedder, tmp_path_factory) -> Iterator[World]:
    memory = Memory(SQLiteStore(tmp_path_factory.mktemp("security") / "security.db"), embedder=embedder)
    ring = KeyRing(store=memory.store)
    keys = {"alice": ring.issue("alice"), "bob": ring.issue("bob"), "root": ring.issue("root", scopes=["admin"])}
    memory.index(_corpus())
    service = Service(memory, ServerSettings(threads=4))
    try:
        with background(service) as url:
            yield World(memory, service, url, keys)
    finally:
        service.close()


# -- 2. keys in the store switch authentication on ------------------------------------------------------


def test_keys_issued_into_the_store_switch_authentication_on(world, embedder, tmp_path):
    anonymous = Caller(world.url, None)
    for caller in (anonymous, Caller(world.url, "hk_not-a-key")):
        refused = caller.post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}})
        assert refused.status_code == 401 and refused.json()["error"]["code"] == -32012
    assert world.alice.result("ping", {"nonce": 1}) == {"nonce": 1}

    # A store without keys: anonymous callers (on loopback) are admin, until a key is issued.
    fresh = Memory(SQLiteStore(tmp_path / "fresh.db"), embedder=embedder)
    service = Service(fresh)
    try:
        with background(service) as url:
            open_door = Caller(url, None)
            assert open_door.post({"jsonrpc": "2.0", "id": 1, "method": "ping"}).status_code == 200
            KeyRing(store=fresh.store).issue("dana", scopes=["read"])
            deadline = time.monotonic() + 10
            while open_door.post({"jsonrpc": "2.0", "id": 2, "method": "ping"}).status_code == 200:
                assert time.monotonic() < deadline, "a key in the store must switch authentication on"
                time.sleep(0.2)
            assert open_door.post({"jsonrpc": "2.0", "id": 3, "method": "ping"}).status_code == 401
    finally:
        service.close()


# -- 1. another user can take over a memory id -----------------------------------------------------------


def test_bob_cannot_take_over_alices_future_memory_id(world):
    alice_uid = memory_uid("user:alice", "theme", "")  # anyone can compute it
    built = world.bob.result("memory/build", {"documents": [
        {"id": alice_uid, "text": "Bob's words planted under alice's memory id."}]})
    assert built["_meta"]["passagesAdded"] == 1  # his own document, in his own memory's space

    first = world.alice.result("x-hippo/remember", {"text": "Alice's theme is the midnight ferry.",
                                                    "customId": "theme", "props": {"mood": "calm-canary"}})
    assert (first["action"], first["version"], first["space"], first["uid"]) == \
        ("inserted", 1, "user:alice", alice_uid)
    versions = world.alice.result("x-hippo/history", {"customId": "theme"})["versions"]
    assert [v["text"] for v in versions] == ["Alice's theme is the midnight ferry."]
    recalled = world.bob.result("memory/recall", {"query": "What is the theme of the midnight ferry?",
                                                  "memoryId": built["memoryId"], "k": 10})
    assert "calm-canary" not in json.dumps(recalled) and "Alice's theme" not in json.dumps(recalled)
    [bobs] = world.memory.store.documents([f"memory:{built['memoryId']}/{alice_uid}"])
    assert bobs.space == f"memory:{built['memoryId']}"

    # In org (admins), ids of another space's form, and ids hippo derives, are refused.
    before = world.revision()
    for taken, why in ((memory_uid("user:alice", "plans", ""), "has the form of an id hippo derives"),
                       ("user:alice/plans", "belong to space 'user:alice'")):
        error = world.root.error("index/add", {"documents": [{"id": taken, "text": "An org document."}]})
        assert error["code"] == -32602 and error["data"]["field"] == "documents[0].id" and why in error["message"]
    assert world.revision() == before


def test_ids_are_owned_by_the_space_that_wrote_them(memory_factory):
    memory = memory_factory()
    alice, bob = ScopedMemory(memory, derive_principal("alice")), ScopedMemory(memory, derive_principal("bob"))
    admin = ScopedMemory(memory, admin_principal())
    future = memory_uid("user:alice", "theme", "")
    planted = bob.index([{"id": future, "text": "Bob's planted text."},
                         {"id": "notes", "text": "Bob's notes on the harbour."}], space="user:bob")
    assert planted.ids == [f"user:bob/{future}", "user:bob/notes"]
    mine = alice.remember("Alice's theme is the midnight ferry.", custom_id="theme")
    assert (mine.action, mine.version, mine.space, mine.uid) == ("inserted", 1, "user:alice", future)
    notes = alice.index([{"id": "notes", "text": "Alice's notes on the lighthouse."}], space="user:alice")
    assert notes.ids == ["user:alice/notes"] and notes.documents_updated == 0
    assert alice.index([{"id": "user:alice/notes", "text": "Alice's notes, second version."}],
                       space="user:alice").documents_updated == 1, "an id of the form <own space>/X is X"
    [bobs] = memory.store.documents(["user:bob/notes"])
    assert (bobs.space, bobs.version) == ("user:bob", 1)
    assert memory.history(uid="user:bob/notes")[0].text == "Bob's notes on the harbour."
    org = admin.index([{"id": "handbook", "text": "The org handbook."}], space="org")
    assert org.ids == ["handbook"], "org ids are stored as given: existing stores keep working"
    derived = admin.index([{"text": "An org note without an id."}], space="org").ids[0]
    assert admin.index([{"id": derived, "text": "An org note without an id."}],
                       space="org").passages_unchanged == 1, "an org document's own derived id upserts it"
    for taken in (future, "user:alice/notes"):
        with pytest.raises(InvalidInput, match=r"^documents\[0\]\.id: "):
            admin.index([{"id": taken, "text": "An org squatter."}], space="org")
    # A record written into another space before ids were owned is never adopted by remember.
    squat = memory_uid("user:carol", "diet", "")
    memory.store.write(_legacy_document(squat, "user:mallory"))
    with pytest.raises(InvalidInput, match="^custom_id: .*another space"):
        memory.remember("Carol is vegetarian.", custom_id="diet", space="user:carol")
    with pytest.raises(Exception, match="no memory, document or passage"):
        memory.forget(custom_id="diet", space="user:carol")


def _legacy_document(uid: str, space: str) -> Any:
    from hippo.models import DocumentRecord, Passage
    from hippo.store import WriteBatch

    passage = Passage(id=f"passage:{uid[-20:]}", doc_id=uid, text="Mallory's planted text.", space=space)
    return WriteBatch(documents=[DocumentRecord(id=uid, space=space, kind="memory")], passages=[passage])


# -- 3. two ways to confirm hidden data exists -------------------------------------------------------------


def test_hidden_and_missing_ids_answer_alike_in_every_method(world):
    note = world.alice.result("x-hippo/remember", {"text": "Alice hides the kelp ledger in Caldry.",
                                                   "customId": "ledger"})
    alice_memory = world.alice.result("memory/build", {"documents": [
        {"id": "plan-7", "text": "Alice's plan for the Quillon lighthouse."}]})["memoryId"]
    alice_session = world.alice.result("memory/build", {"scope": "session"})["sessionId"]
    passage = world.memory.store.document_passages([note["uid"]])[0].id
    plan = f"memory:{alice_memory}/plan-7"
    before = world.memory.store.documents([plan])

    hidden_ids = {"memory": note["uid"], "passage": passage, "plan": plan, "memoryId": alice_memory,
                  "sessionId": alice_session}
    missing_ids = {"memory": MISSING_MEMORY, "passage": "passage:00000000000000000000",
                   "plan": "memory:mem-0000000000000000/plan-7", "memoryId": "mem-0000000000000000",
                   "sessionId": "ses-0000000000000000"}
    cases = [  # (method, params, the id it names): "{memory}" stands for that id
        ("x-hippo/forget", {"uid": "{memory}"}, "memory"),
        ("x-hippo/forget", {"uid": "{memory}", "dryRun": True}, "memory"),
        ("x-hippo/forget", {"uid": "{passage}"}, "passage"),
        ("x-hippo/restore", {"uid": "{memory}"}, "memory"),
        ("x-hippo/history", {"uid": "{memory}"}, "memory"),
        ("x-hippo/history", {"uid": "{plan}"}, "plan"),
        ("memory/recall", {"query": "kelp ledger", "memoryId": "{memoryId}"}, "memoryId"),
        ("memory/build", {"memoryId": "{memoryId}"}, "memoryId"),
        ("retrieve", {"query": "kelp", "sessionId": "{sessionId}"}, "sessionId"),
        ("graph", {"op": "local", "seedIds": ["{passage}"]}, "passage"),
        ("graph", {"op": "neighbors", "seedIds": ["{passage}"]}, "passage"),
        ("index/delete", {"ids": ["{memory}"]}, "memory"),
        ("index/delete", {"ids": ["{plan}"]}, "plan"),
        ("retrieve", {"query": "kelp", "filter": {"field": "docId", "op": "eq", "value": "{memory}"}}, "memory"),
    ]
    for method, params, named in cases:
        replies = []
        for ids in (hidden_ids, missing_ids):
            reply = world.bob.call(method, json.loads(json.dumps(params).replace("{" + named + "}", ids[named])))
            reply.pop("id")
            reply.get("result", {}).pop("usage", None)  # latencies differ
            replies.append(json.dumps(reply, sort_keys=True).replace(ids[named], "<id>"))
        assert replies[0] == replies[1], (method, params, replies)

    # memory/build with a hidden document id and an unused one: both are bob's own new documents.
    planted = world.bob.result("memory/build", {"documents": [{"id": plan, "text": "Bob's text."},
                                                              {"id": missing_ids["plan"], "text": "Bob's."}]})
    assert planted["_meta"]["passagesAdded"] == 2
    assert world.memory.store.documents([plan]) == before, "alice's document is untouched"
    assert [v["text"] for v in world.alice.result("x-hippo/history", {"customId": "ledger"})["versions"]] == \
        ["Alice hides the kelp ledger in Caldry."]


def test_a_dry_run_lists_only_what_leaves_the_callers_view(world):
    shared = "Orrin Vashteld"
    world.alice.result("x-hippo/remember", {"text": f"{shared} keeps Alice's spare key in Morrowen.",
                                            "customId": "key"})
    mine = world.bob.result("x-hippo/remember", {"text": f"Bob met {shared} at the Morrowen harbour.",
                                                 "customId": "met"})
    preview = world.bob.result("x-hippo/forget", {"customId": "met", "dryRun": True})
    names = {e["name"] for e in preview["entities"]}
    assert shared in names, "the entity leaves bob's view: whether alice also mentions it is not his to know"
    admin = ScopedMemory(world.memory, admin_principal()).forget(mine["uid"], dry_run=True)
    assert shared not in {e.name for e in admin.entities}, "an admin sees alice's passage keep it"

    # The MCP tool (delete_memory, dry_run) answers the same, through the same facade.
    from hippo.mcp_server import build_server

    server = build_server(world.memory, principal=derive_principal("bob"))
    result = anyio.run(server.call_tool, "delete_memory", {"custom_id": "met", "dry_run": True})
    data = result.structured_content or json.loads(result.content[0].text)
    assert shared in {e["name"] for e in data["entities"]}
    assert world.bob.result("x-hippo/history", {"customId": "met"})["versions"][0]["state"] == "live"


# -- 2. cross-site requests and DNS rebinding ---------------------------------------------------------------


def test_a_web_page_cannot_post_to_the_server(embedder, tmp_path):
    """A keyless loopback server (anonymous = admin): what a page in the user's browser could send."""
    memory = Memory(SQLiteStore(tmp_path / "csrf.db"), embedder=embedder)
    kept = memory.remember("The vault code is 4471.", custom_id="vault")
    service = Service(memory)
    attack = json.dumps([{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}},
                         {"jsonrpc": "2.0", "id": 2, "method": "x-hippo/forget", "params": {"customId": "vault"}}])
    try:
        with background(service) as url:
            port = url.split(":")[2].split("/")[0]

            def post(headers: dict[str, str], body: str = attack) -> httpx.Response:
                return httpx.post(url, content=body, headers=headers, timeout=60)

            simple = post({"Content-Type": "text/plain", "Origin": "http://evil.example"})
            assert simple.status_code == 403  # the Origin alone refuses it
            for content_type in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; b=x", ""):
                refused = post({"Content-Type": content_type})
                assert refused.status_code == 415 and "application/json" in refused.json()["error"]["message"]
            rebound = post({"Content-Type": "application/json", "Host": f"evil.example:{port}"})
            assert rebound.status_code == 421 and "allowed-host" in rebound.json()["error"]["message"]
            assert post({"Content-Type": "application/json", "Origin": "null"}).status_code == 403
            preflight = httpx.options(url, headers={"Origin": "http://evil.example",
                                                    "Access-Control-Request-Method": "POST"}, timeout=60)
            assert preflight.status_code == 403
            assert memory.history("vault")[0].state == "live", "nothing was forgotten"

            ok = post({"Content-Type": "application/json; charset=utf-8", "Host": f"localhost:{port}"},
                      json.dumps({"jsonrpc": "2.0", "id": 3, "method": "ping"}))
            assert ok.status_code == 200 and ok.json()["result"] == {}
            assert not any(h.lower().startswith("access-control-") for h in ok.headers), "no CORS unless configured"
    finally:
        service.close()
    assert kept.version == 1


def test_allowed_hosts_and_origins_are_configurable(embedder, tmp_path, monkeypatch):
    monkeypatch.setenv("HIPPO_SERVER_ALLOWED_HOSTS", "hippo.internal, search.example")
    settings = ServerSettings(allowed_origins=["https://app.example"])
    assert settings.allowed_hosts == ["hippo.internal", "search.example"]
    service = Service(Memory(SQLiteStore(tmp_path / "hosts.db"), embedder=embedder), settings)
    ping = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    try:
        with background(service) as url:
            def post(**headers: str) -> httpx.Response:
                return httpx.post(url, content=ping, headers={"Content-Type": "application/json", **headers},
                                  timeout=60)

            assert post(Host="hippo.internal:8765").status_code == 200
            assert post(Host="SEARCH.example").status_code == 200
            assert post(Host="evil.example").status_code == 421
            cors = post(Origin="https://app.example")
            assert cors.status_code == 200 and cors.headers["access-control-allow-origin"] == "https://app.example"
            assert post(Origin="https://app.example.evil.example").status_code == 403
            preflight = httpx.options(url, headers={"Origin": "https://app.example",
                                                    "Access-Control-Request-Method": "POST",
                                                    "Access-Control-Request-Headers": "content-type,x-api-key"},
                                      timeout=60)
            assert preflight.status_code == 204
            assert "X-API-Key" in preflight.headers["access-control-allow-headers"]
    finally:
        service.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _hippo(*args: str, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hippo.cli", *args], capture_output=True, text=True,
                          env={**ENV, **(env or {})}, cwd=REPO, timeout=timeout)


def test_serving_beyond_loopback_needs_keys_or_an_explicit_flag(tmp_path):
    store = str(tmp_path / "open.db")
    for command in (["serve", "--http"], ["mcp", "--user", "dana", "--http"]):
        done = _hippo(*command, f"0.0.0.0:{_free_port()}", "--store", store)
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 2 and len(lines) == 1, done.stderr
        assert "without API keys" in lines[0] and "hippo keys issue" in lines[0] and "--insecure-no-auth" in lines[0]
    assert exposure_refusal("127.0.0.1", keys=False, insecure=False, command="x") is None
    assert exposure_refusal("[::1]", keys=False, insecure=False, command="x") is None
    assert exposure_refusal("0.0.0.0", keys=True, insecure=False, command="x") is None
    assert exposure_refusal("0.0.0.0", keys=False, insecure=True, command="x") is None
    assert exposure_refusal("10.1.2.3", keys=False, insecure=False, command="x") is not None

    # Over stdio an unknown key is one line and exit 2, before any model loads.
    keyed = str(tmp_path / "keyed.db")
    assert _hippo("keys", "issue", "--user", "dana", "--store", keyed).returncode == 0
    unknown = _hippo("serve", "--stdio", "--store", keyed, env={"HIPPO_API_KEY": "hk_nobody"})
    assert unknown.returncode == 2 and "Traceback" not in unknown.stderr
    assert unknown.stderr.strip().splitlines()[-1].startswith("error: HIPPO_API_KEY is not a known API key")


def test_insecure_no_auth_serves_anyone_with_a_warning(tmp_path):
    port = _free_port()
    process = subprocess.Popen([sys.executable, "-m", "hippo.cli", "serve", "--http", f"0.0.0.0:{port}",
                                "--insecure-no-auth", "--store", str(tmp_path / "insecure.db")],
                               env=ENV, cwd=REPO, stderr=subprocess.PIPE, text=True)
    try:
        url = f"http://127.0.0.1:{port}/rcp"
        deadline = time.monotonic() + 300
        while True:
            assert process.poll() is None and time.monotonic() < deadline, process.stderr.read()
            try:
                reply = httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, timeout=5)
                break
            except httpx.HTTPError:
                time.sleep(0.5)
        assert reply.status_code == 200 and reply.json()["result"] == {}
    finally:
        process.terminate()
        stderr = process.communicate(timeout=60)[1]
    assert "warning: serving 0.0.0.0 without API keys: every caller is admin" in stderr


# -- 4. deeply nested data ---------------------------------------------------------------------------------


def _nest(depth: int, leaf: Any = "x") -> Any:
    value = leaf
    for i in range(depth):
        value = {"a": value} if i % 2 else [value]
    return value


def test_deep_json_is_refused_naming_the_field_and_the_limit(world, open_memory):
    before = world.revision()
    cases = [
        (world.root, "index/add", {"documents": [{"text": "deep meta", "meta": {"k": _nest(600)}}]},
         "documents[0].meta"),
        (world.bob, "memory/build", {"documents": [{"text": "deep meta", "meta": _nest(40)}]}, "documents[0].meta"),
        (world.alice, "x-hippo/remember", {"text": "deep props", "props": {"p": _nest(260)}}, "props"),
        (world.alice, "retrieve", {"query": "x", "filter": {"field": "meta.x", "op": "eq", "value": _nest(600)}},
         "filter"),
        (world.alice, "ping", {"nonce": _nest(500)}, "nonce"),
        (world.alice, "graph", {"op": "local", "seedIds": _nest(100)}, "seedIds"),
    ]
    for caller, method, params, field in cases:
        error = caller.error(method, params)
        assert error["code"] == -32602 and error["data"] == {"field": field, "limit": 32}, (method, error)
        assert f"{field}: nests more than 32 levels" in error["message"]
    assert world.revision() == before, "nothing was stored"
    at_limit = world.alice.result("x-hippo/remember", {"text": "props at the limit", "props": {"p": _nest(31)}})
    listed = world.alice.result("x-hippo/memories", {"limit": 100})["memories"]
    assert any(m["uid"] == at_limit["uid"] for m in listed), "a stored value at the limit reads back"

    memory = open_memory()  # the Python API holds the same limit
    with pytest.raises(InvalidInput) as caught:
        memory.index([{"text": "deep", "meta": {"m": _nest(32)}}])
    assert (caught.value.field, caught.value.limit) == ("documents[0].meta", 32)
    with pytest.raises(InvalidInput) as caught:
        memory.remember("deep", props={"p": _nest(40)})
    assert (caught.value.field, caught.value.limit) == ("props", 32)


def test_a_failing_handler_is_an_internal_error_and_the_server_stays_up(world, monkeypatch, caplog):
    def broken(svc, ctx, raw):
        raise RuntimeError("disk on fire\nsecond line of the message")

    def unencodable(svc, ctx, raw):
        return {"hits": _nest(3000)}  # deeper than json.dumps can go

    caplog.set_level(logging.ERROR, logger="hippo.server")
    for fault in (broken, unencodable):
        monkeypatch.setitem(handlers.CORE, "retrieve", fault)
        caplog.clear()
        reply = world.alice.post({"jsonrpc": "2.0", "id": 7, "method": "retrieve", "params": {"query": "x"}})
        assert reply.status_code == 200, reply.text
        error = reply.json()["error"]
        assert error["code"] == -32603 and reply.json()["id"] == 7
        request_id = error["data"]["requestId"]
        assert request_id in error["message"] and "disk on fire" not in error["message"]
        logged = [r.getMessage() for r in caplog.records]
        assert len(logged) == 1 and request_id in logged[0] and "\n" not in logged[0], logged
        assert world.alice.result("ping", {"nonce": 2}) == {"nonce": 2}, "the server stays up"

        # stdio: the same, through the transport's own loop
        lines = io.BytesIO(b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}\n'
                           b'{"jsonrpc":"2.0","id":2,"method":"retrieve","params":{"query":"x"}}\n'
                           b'{"jsonrpc":"2.0","id":3,"method":"ping"}\n')
        frames = io.BytesIO()
        stdio_transport.serve(world.service, lines, frames)
        replies = [json.loads(line) for line in frames.getvalue().splitlines()]
        assert [r["id"] for r in replies] == [1, 2, 3]
        assert replies[1]["error"]["code"] == -32603 and replies[2]["result"] == {}


# -- 5. CPU denial of service through filter lists ----------------------------------------------------------


def test_filter_lists_are_bounded_and_matched_as_sets(world):
    too_long = {"field": "meta.tag", "op": "in", "value": [f"t{i}" for i in range(1001)]}
    error = world.alice.error("retrieve", {"query": "island", "filter": too_long})
    assert error["code"] == -32602 and error["data"] == {"field": "filter.value", "limit": 1000}
    nin = {"field": "docId", "op": "nin", "value": [f"nope-{i}" for i in range(1000)]}
    assert world.alice.result("retrieve", {"query": "island", "filter": nin, "k": 3})["hits"]
    wide = {"or": [{"field": "docId", "op": "eq", "value": f"d{i}"} for i in range(1000)]}
    error = world.alice.error("retrieve", {"query": "island", "filter": wide})
    assert error["code"] == -32602 and error["data"] == {"field": "filter", "limit": 1000}

    tree = rcp_filters.validate({"field": "meta.v", "op": "in", "value": [1, "2", True]})
    values = (1, 1.0, "1", 2, "2", True, False, None, [1])
    matched = [v for v in values if rcp_filters.matches(tree, {"meta": {"v": v}})]
    assert matched == [1, 1.0, "2", True], "numbers, strings and booleans never match across kinds"


# -- 6. the memory list grows without bound for everyone ----------------------------------------------------


def _record(i: int, owner: str, session: str | None = None) -> MemoryRecord:
    stamp = f"2026-01-01T00:00:00.{i:06d}+00:00"
    return MemoryRecord(id=f"mem-{i:04d}", scope="session" if session else "global", spaces=None, home="org",
                        session_id=session, owner=owner, created_at=stamp, updated_at=stamp)


def test_memory_records_are_per_owner_and_looked_up_by_key(tmp_path):
    from hippo.server.auth import Context, LiveSpaces, Principal

    store = SQLiteStore(tmp_path / "registry.db")
    reads = mock.patch.object(store, "get_values", wraps=store.get_values)
    writes = mock.patch.object(store, "put_values", wraps=store.put_values)
    registry = MemoryRegistry(store)

    def ctx(owner: str | None) -> Context:
        return Context(live=LiveSpaces(None), principal=Principal(id=owner) if owner else None)  # type: ignore[arg-type]

    costs = []
    for n in (10, 300):
        for i in range(len(costs) * 10, n):
            registry.save(_record(i, owner=f"user-{i % 5}"))
        with reads as read, writes as written:  # the key-value keys one save and one lookup touch
            registry.save(_record(10_000 + n, owner="user-1"))
            assert registry.latest(ctx("user-1")).id == f"mem-{10_000 + n:04d}"
        costs.append((sum(len(list(c.args[1])) for c in read.call_args_list),
                      sum(len(c.args[1]) for c in written.call_args_list)))
    assert costs[0] == costs[1] == (1, 2), "the same keys read and written at 10 and 300 memories"
    registry.save(_record(20_000, owner="user-2", session="ses-1"))
    assert registry.latest(ctx("user-2"), "ses-1").id == "mem-20000"
    assert registry.latest(ctx("user-2")).id != "mem-20000", "a session's memory is not the global latest"
    assert registry.latest(ctx("nobody")) is None and registry.latest(ctx(None)) is None

    # A store written before: one list of every memory. The first registry points owners at theirs.
    legacy = SQLiteStore(tmp_path / "legacy.db")
    records = [_record(i, owner=f"user-{i % 2}") for i in range(6)]
    legacy.put_values(NAMESPACE, {**{r.id: r.model_dump_json(by_alias=True) for r in records},
                                  LEGACY_INDEX: json.dumps([r.id for r in records])})
    migrated = MemoryRegistry(legacy)
    assert migrated.latest(ctx("user-0")).id == "mem-0004" and migrated.latest(ctx("user-1")).id == "mem-0005"
    assert legacy.get_values(NAMESPACE, [LEGACY_INDEX, latest_key("user-0")]) == {latest_key("user-0"): "mem-0004"}
    store.close()
    legacy.close()


# -- 8. smaller ones -------------------------------------------------------------------------------------------


def test_forget_with_a_uid_and_a_custom_id_that_disagree_is_refused(world):
    one = world.alice.result("x-hippo/remember", {"text": "Alice's first locker is 12.", "customId": "locker-1"})
    world.alice.result("x-hippo/remember", {"text": "Alice's second locker is 14.", "customId": "locker-2"})
    error = world.alice.error("x-hippo/forget", {"uid": one["uid"], "customId": "locker-2"})
    assert error["code"] == -32602 and error["data"]["field"] == "custom_id"
    assert world.alice.error("x-hippo/history", {"uid": one["uid"], "customId": "locker-2"})["code"] == -32602
    for custom_id in ("locker-1", "locker-2"):
        versions = world.alice.result("x-hippo/history", {"customId": custom_id})["versions"]
        assert versions[-1]["state"] == "live", "nothing was forgotten"
    agreed = world.alice.result("x-hippo/forget", {"uid": one["uid"], "customId": "locker-1"})
    assert agreed["uid"] == one["uid"]


@pytest.mark.parametrize("space", ["user:\u0007bell", "user:a b", "user:x\n", "user:a/b", "User:x", "org2",
                                   "user:", ":x", "x" * 201, "user:\u202ertl"])
def test_a_space_name_outside_the_pattern_is_refused(space):
    with pytest.raises(InvalidInput) as caught:
        check_space("space", space)
    assert caught.value.field == "space"


def test_space_names_follow_one_pattern_everywhere(world, open_memory):
    for good in ("org", "user:alice", "user:dana@example.com", "session:ses-1f2e", "memory:mem-9c", "team:eng:ops",
                 "user:Søren", "user:東京"):
        assert check_space("space", good) == good
    error = world.root.error("x-hippo/remember", {"text": "bell", "space": "user:\u0007bell"})
    assert error["code"] == -32602 and error["data"]["field"] == "space" and "<kind>:<name>" in error["message"]
    memory = open_memory()
    with pytest.raises(InvalidInput) as caught:
        memory.index([{"text": "x", "space": "team:\x1b[31mred"}])
    assert caught.value.field == "documents[0].space"
    with pytest.raises(InvalidInput, match="user_id"):
        derive_principal("bell\u0007")
    with pytest.raises(ValueError, match="space"):
        Grant(space="team:\u0007")
    with pytest.raises(InvalidInput, match="^space"):
        memory.set_remember_instructions("x", space="user:a b")


# -- hippo keys ---------------------------------------------------------------------------------------------------


def test_hippo_keys_issue_list_revoke(tmp_path):
    store = str(tmp_path / "keys.db")
    issued = _hippo("keys", "issue", "--user", "dana", "--group", "eng", "--scopes", "read,write",
                    "--label", "ci bot", "--store", store)
    assert issued.returncode == 0, issued.stderr
    key = issued.stdout.strip()
    assert key.startswith("hk_") and len(issued.stdout.splitlines()) == 1
    key_id = key_hash(key)[:12]
    assert key_id in issued.stderr and "shown once" in issued.stderr

    with sqlite3.connect(store) as db:  # what the store holds: the hash and the record, never the key
        rows = db.execute("SELECT key, value FROM kv WHERE namespace = ?", (KEY_NAMESPACE,)).fetchall()
    assert [r[0] for r in rows] == [key_hash(key)] and key not in json.dumps(rows)
    principal = KeyRing(store=SQLiteStore(store)).principal_for_key(key)
    assert principal.user_id == "dana" and principal.groups == {"eng"} and not principal.has_scope("forget")

    listed = _hippo("keys", "list", "--json", "--store", store)
    assert [(k["id"], k["user"], k["scopes"], k["label"]) for k in json.loads(listed.stdout)] == \
        [(key_id, "dana", ["read", "write"], "ci bot")] and key not in listed.stdout

    bad = _hippo("keys", "issue", "--user", "dana", "--scopes", "read,root", "--store", store)
    assert bad.returncode == 2 and "scopes" in bad.stderr and "Traceback" not in bad.stderr
    assert _hippo("keys", "revoke", "0123456789ab", "--store", store).returncode == 2
    revoked = _hippo("keys", "revoke", key_id, "--store", store)
    assert revoked.returncode == 0, revoked.stderr
    ring = KeyRing(store=SQLiteStore(store))
    assert ring.principal_for_key(key) is None and ring.records() == []
