"""``hippo mcp`` driven by the ``mcp`` SDK's own client: over stdio (a subprocess per user) and
over streamable HTTP with API keys (a real socket)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client, StdioServerParameters

from hippo.keys import key_hash

TOOLS = {"search_memory", "add_memory", "delete_memory", "clear", "add_global_knowledge"}


def _params(store: Path, *args: str) -> StdioServerParameters:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    return StdioServerParameters(command=sys.executable, args=["-m", "hippo.cli", "mcp", "--store", str(store), *args],
                                 env=env)


def _data(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content[0].text if result.content else result
    if result.structured_content is not None:
        return result.structured_content
    return json.loads(result.content[0].text)


def _error(result: Any) -> str:
    assert result.is_error, f"expected an error, got {result}"
    return result.content[0].text


async def _call(client: Client, tool: str, **arguments: Any) -> Any:
    return await client.call_tool(tool, arguments)


def _client(params: Any) -> Client:
    # No response cache: the context resource changes with every write.
    return Client(params, cache=None, read_timeout_seconds=300)


def test_stdio_tools_add_search_delete_clear(tmp_path: Path):
    store = tmp_path / "mcp.db"

    async def as_admin() -> None:
        async with _client(_params(store, "--user", "root", "--admin")) as client:
            added = _data(await _call(client, "add_global_knowledge", title="Refund policy",
                                      text="Larkspur refunds annual plans within 30 days of purchase."))
            assert added["passagesAdded"] == 1

    async def as_alice() -> None:
        async with _client(_params(store, "--user", "alice")) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            assert tools == TOOLS
            resources = {str(r.uri) for r in (await client.list_resources()).resources}
            assert "hippo://context" in resources
            assert (await client.read_resource("hippo://context")).contents[0].text == "", "nothing known yet"

            first = _data(await _call(client, "add_memory", text="Alice is working on the Atlas migration project."))
            assert first["action"] == "inserted" and first["space"] == "user:alice"
            second = _data(await _call(client, "add_memory", text="Alice enjoys Baroque music.", custom_id="music"))
            found = _data(await _call(client, "search_memory", query="Which project is Alice working on?", k=3))
            assert found["hits"][0]["id"].startswith("passage:") and "Atlas" in found["hits"][0]["text"]
            assert {h["space"] for h in found["hits"]} <= {"user:alice", "org"}
            glob = _data(await _call(client, "search_memory", query="refunds for annual plans", k=3))
            assert any("30 days" in h["text"] for h in glob["hits"]), "global knowledge is visible to every user"

            block = (await client.read_resource("hippo://context")).contents[0].text
            assert "### Work" in block and "Atlas migration" in block and "Baroque" in block

            preview = _data(await _call(client, "delete_memory", custom_id="music", dry_run=True))
            assert preview["dryRun"] is True and preview["uid"] == second["uid"]
            assert "Baroque" in (await client.read_resource("hippo://context")).contents[0].text, "dry run kept it"
            gone = _data(await _call(client, "delete_memory", uid=second["uid"]))
            assert gone["passages"] and gone["undo"]["method"] == "restore"
            assert "Baroque" not in (await client.read_resource("hippo://context")).contents[0].text
            assert "already_forgotten" in _error(await _call(client, "delete_memory", uid=second["uid"]))

            denied = _error(await _call(client, "add_global_knowledge", text="Alice's rule for everyone."))
            assert "access_denied" in denied and "'org'" in denied
            assert "access_denied" in _error(await _call(client, "clear", user_id="bob", dry_run=True))
            assert "k:" in _error(await _call(client, "search_memory", query="x", k=0))

            dry = _data(await _call(client, "clear", dry_run=True))
            assert dry["dryRun"] is True and dry["count"] == 1 and dry["confirm"]
            refused = _error(await _call(client, "clear", dry_run=False, confirm="wrong"))
            assert "confirm" in refused
            assert (await client.read_resource("hippo://context")).contents[0].text, "a refused clear changed nothing"
            done = _data(await _call(client, "clear", dry_run=False, confirm=dry["confirm"]))
            assert done["count"] == 1 and done["dryRun"] is False
            assert (await client.read_resource("hippo://context")).contents[0].text == ""
            after = _data(await _call(client, "search_memory", query="Atlas migration project", k=5))
            assert all(h["space"] != "user:alice" for h in after["hits"])

    async def as_bob() -> None:
        async with _client(_params(store, "--user", "bob")) as client:
            _data(await _call(client, "add_memory", text="Bob keeps the zorvex ledger key in the red folder."))
        async with _client(_params(store, "--user", "carol")) as client:
            hits = _data(await _call(client, "search_memory", query="zorvex ledger key red folder", k=10))["hits"]
            assert all("zorvex" not in h["text"] for h in hits), "carol never sees bob's memory"
            assert "not_found" in _error(await _call(client, "delete_memory", custom_id="x"))

    anyio.run(as_admin)
    anyio.run(as_alice)
    anyio.run(as_bob)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[tuple[str, dict[str, str]]]:
    keys = {"alice": "alice-secret-key", "root": "root-secret-key"}
    key_file = tmp_path / "keys.toml"
    key_file.write_text(
        f'[[keys]]\nsha256 = "{key_hash(keys["alice"])}"\nuser = "alice"\n\n'
        f'[[keys]]\nsha256 = "{key_hash(keys["root"])}"\nuser = "root"\nscopes = ["admin"]\n', encoding="utf-8")
    port = _free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "HIPPO_API_KEYS": str(key_file)}
    # Beyond loopback (keys are configured) and reachable under one more host name.
    process = subprocess.Popen([sys.executable, "-m", "hippo.cli", "mcp", "--store", str(tmp_path / "http.db"),
                                "--http", f"0.0.0.0:{port}", "--allowed-host", "hippo.test"], env=env,
                               stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}/mcp"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"hippo mcp --http exited: {process.stderr.read()}")
        try:
            httpx.get(url, timeout=1)
            break
        except httpx.HTTPError:
            time.sleep(0.5)
    try:
        yield url, keys
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_http_needs_an_api_key_and_acts_for_its_user(http_server: tuple[str, dict[str, str]]):
    url, keys = http_server
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    assert httpx.post(url, json=body, timeout=10).status_code == 401
    wrong = httpx.post(url, json=body, headers={"Authorization": "Bearer nope"}, timeout=10)
    assert wrong.status_code == 401 and "API key" in wrong.json()["error"]

    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    async def run(key: str, work: Any) -> Any:
        async with httpx2.AsyncClient(headers={"X-API-Key": key}, timeout=300) as http:
            async with streamable_http_client(url, http_client=http) as streams:
                async with Client(_Transport(streams), cache=None) as client:
                    return await work(client)

    async def alice(client: Client) -> None:
        assert {t.name for t in (await client.list_tools()).tools} == TOOLS
        added = _data(await _call(client, "add_memory", text="Alice prefers window seats on trains."))
        assert added["space"] == "user:alice"
        hits = _data(await _call(client, "search_memory", query="seat preference on trains"))["hits"]
        assert hits and hits[0]["space"] == "user:alice"
        assert "access_denied" in _error(await _call(client, "add_global_knowledge", text="x"))

    async def root(client: Client) -> None:
        block = (await client.read_resource("hippo://context/alice")).contents[0].text
        assert "window seats" in block
        assert (await client.read_resource("hippo://context")).contents[0].text == ""

    anyio.run(run, keys["alice"], alice)
    anyio.run(run, keys["root"], root)


def test_http_takes_the_allowed_hosts_and_refuses_cross_site_requests(http_server: tuple[str, dict[str, str]]):
    url, keys = http_server
    port = url.split(":")[2].split("/")[0]
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    sent = {"X-API-Key": keys["alice"], "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream"}

    def post(**headers: str) -> httpx.Response:
        return httpx.post(url, content=body, headers={**sent, **headers}, timeout=30)

    plain = post()
    assert plain.status_code not in (403, 415, 421)
    assert post(Host=f"hippo.test:{port}").status_code == plain.status_code, "--allowed-host is honoured"
    assert post(Host=f"evil.example:{port}").status_code == 421, "a rebinding name is refused"
    assert post(Origin="http://evil.example").status_code == 403
    assert post(**{"Content-Type": "text/plain"}).status_code == 415


class _Transport:
    """Hands already-open streams to ``Client`` (the SDK's Transport protocol)."""

    def __init__(self, streams: Any) -> None:
        self.streams = streams

    async def __aenter__(self) -> Any:
        return self.streams

    async def __aexit__(self, *exc: object) -> None:
        return None
