"""``hippo serve`` (RCP over stdio or HTTP) and ``hippo mcp`` (MCP over stdio or streamable HTTP).

Beyond loopback, a server without API keys would make every caller an admin:
both commands refuse to start that way (one line naming the fix) unless told
``--insecure-no-auth``. Who may reach an HTTP server is also a matter of
``Host`` and ``Origin`` (``hippo.api.guard``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from hippo.cli.common import StoreOption, err, fail
from hippo.errors import HippoError

HostsOption = Annotated[list[str] | None, typer.Option(
    "--allowed-host", help="a Host name clients use besides loopback (repeat) [env HIPPO_SERVER_ALLOWED_HOSTS]")]
OriginsOption = Annotated[list[str] | None, typer.Option(
    "--allowed-origin", help="a browser Origin allowed, with CORS (repeat) [env HIPPO_SERVER_ALLOWED_ORIGINS]")]
InsecureOption = Annotated[bool, typer.Option(
    "--insecure-no-auth", help="serve beyond loopback without API keys: every caller is admin")]


def _http_address(http: str | None) -> tuple[str, int]:
    host, _, port = (http or "").rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise fail(f"--http: expected HOST:PORT, got {http!r}")
    return host.strip("[]"), int(port)


def _server_settings(hosts: list[str] | None, origins: list[str] | None) -> Any:
    from hippo.api.config import ServerSettings

    env = ServerSettings()
    return env.model_copy(update={"allowed_hosts": [*env.allowed_hosts, *(hosts or [])],
                                  "allowed_origins": [*env.allowed_origins, *(origins or [])]})


def _exposed(store: Any, settings: Any, host: str, insecure: bool, command: str) -> None:
    """Refuse (one line, exit 2) to serve beyond loopback without keys; warn when told to anyway."""
    from hippo.access.keys import keys_configured
    from hippo.api.guard import exposure_refusal, is_loopback

    keys = keys_configured(store, settings)
    refusal = exposure_refusal(host, keys=keys, insecure=insecure, command=command)
    if refusal is not None:
        store.close()
        raise fail(refusal)
    if not keys and not is_loopback(host):
        err.print(f"[yellow]warning:[/yellow] serving {host} without API keys: every caller is admin",
                  highlight=False)


def _known_key(store: Any, settings: Any) -> None:
    """Over stdio the caller is whoever started the server: HIPPO_API_KEY (if set) must name someone."""
    from hippo.access.keys import KeyRing

    key = os.environ.get("HIPPO_API_KEY")
    if key and KeyRing.from_settings(settings, store).principal_for_key(key) is None:
        store.close()
        raise fail("HIPPO_API_KEY is not a known API key (see 'hippo keys list')")


def serve(
    stdio: Annotated[bool, typer.Option("--stdio", help="serve newline-delimited JSON-RPC on stdin/stdout")] = False,
    http: Annotated[str | None, typer.Option("--http", metavar="HOST:PORT", help="serve HTTP at /rcp")] = None,
    store: StoreOption = None,
    allowed_host: HostsOption = None,
    allowed_origin: OriginsOption = None,
    insecure_no_auth: InsecureOption = False,
) -> None:
    """Serve the memory over the Retrieval Context Protocol (RCP/1, JSON-RPC 2.0)."""
    if stdio == (http is not None):
        raise fail("give exactly one of --stdio or --http HOST:PORT")
    host, port = _http_address(http) if http is not None else ("", 0)
    try:
        from hippo.api.rcp import open_service
        from hippo.api.rcp import stdio as stdio_transport
        from hippo.config import Settings
        from hippo.store import open_store

        settings = Settings()
        opened = open_store(store or settings.store)
        if http is not None:
            _exposed(opened, settings, host, insecure_no_auth, "hippo serve")
        else:
            _known_key(opened, settings)
        frames = stdio_transport.protocol_stdout() if stdio else None  # stdout is protocol-only from here
        service = open_service(opened, settings=settings,
                               server_settings=_server_settings(allowed_host, allowed_origin))
    except HippoError as exc:
        raise fail(str(exc)) from None
    try:
        if frames is not None:
            stdio_transport.serve(service, sys.stdin.buffer, frames)
        else:
            from hippo.api.rcp.http import serve as serve_http

            err.print(f"hippo RCP server on http://{host}:{port}/rcp (store {service.memory.store.url})")
            serve_http(service, host, port)
    except HippoError as exc:  # an unknown HIPPO_API_KEY over stdio
        raise fail(str(exc)) from None
    finally:
        service.close()


def mcp(
    store: StoreOption = None,
    user: Annotated[str | None, typer.Option(help="the user the tools act for (stdio; HTTP without keys) "
                                                  "[or env HIPPO_API_KEY]")] = None,
    group: Annotated[list[str] | None, typer.Option(help="a group of --user (repeat)")] = None,
    admin: Annotated[bool, typer.Option("--admin", help="--user is an admin")] = False,
    http: Annotated[str | None, typer.Option("--http", metavar="HOST:PORT",
                                             help="serve streamable HTTP at /mcp; callers send API keys")] = None,
    api_keys: Annotated[Path | None, typer.Option(help="TOML/JSON API key file [env HIPPO_API_KEYS]")] = None,
    allowed_host: HostsOption = None,
    allowed_origin: OriginsOption = None,
    insecure_no_auth: InsecureOption = False,
) -> None:
    """Serve per-user memory tools over MCP: stdio (acting for --user) or streamable HTTP (API keys)."""
    host, port = _http_address(http) if http is not None else ("", 0)
    try:
        from hippo.access import derive_principal
        from hippo.access.keys import KeyRing
        from hippo.api.mcp import build_server, http_app
        from hippo.config import Settings
        from hippo.store import open_store

        settings = Settings(**({"api_keys": str(api_keys)} if api_keys else {}))
        opened = open_store(store or settings.store)
        if http is not None:
            _exposed(opened, settings, host, insecure_no_auth, "hippo mcp")
        with err.status("loading models..."):
            from hippo.memory import Memory

            memory = Memory.open(opened).load_models()
        with memory:
            keys = KeyRing.from_settings(settings, store=memory.store)
            principal = None
            if user:
                scopes = ["read", "write", "forget", *(["admin"] if admin else [])]
                principal = derive_principal(user, groups=group or [], scopes=scopes, grants=keys.grants)
            if http is not None:
                import uvicorn

                keyed = keys.required or settings.require_api_key
                if keyed == (principal is not None):
                    raise fail("with API keys configured, callers bring their own: drop --user" if keyed else
                                "without API keys, say who the tools act for: --user NAME")
                app_ = http_app(memory, keys if keyed else None, principal=principal,
                                settings=_server_settings(allowed_host, allowed_origin), bound=host)
                err.print(f"hippo MCP server on http://{host}:{port}/mcp (store {memory.store.url})")
                uvicorn.run(app_, host=host, port=port, log_level="warning")
                return
            key = os.environ.get("HIPPO_API_KEY")
            if principal is None and key:
                principal = keys.principal_for_key(key)
                if principal is None:
                    raise fail("HIPPO_API_KEY is not a known API key")
            elif principal is None:
                raise fail("stdio needs the user the tools act for: --user NAME (or HIPPO_API_KEY)")
            build_server(memory, principal=principal).run("stdio")
    except HippoError as exc:
        raise fail(str(exc)) from None
