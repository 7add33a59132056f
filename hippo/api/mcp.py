"""hippo as an MCP server (``hippo mcp``): per-user memory tools for agents.

Tools: ``search_memory`` (recall: clues and hits over what the caller may
read), ``add_memory`` (remember, in the caller's space), ``delete_memory``
(forget, with a dry run), ``clear`` (a user's whole space: the user or an
admin, and a dry run first: the real call must quote the dry run's
``confirm`` token, so nothing changed in between) and ``add_global_knowledge``
(a document in ``org``, admins only). The resource ``hippo://context`` is the
caller's user-context block.

Who is calling: over stdio the principal is fixed when the server starts (an
argument); over streamable HTTP every request carries an API key
(``Authorization: Bearer <key>`` or ``X-API-Key``), checked before MCP sees
the request and again per tool call. Every read and write goes through
``hippo.access.ScopedMemory``.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

import anyio
from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.server.transport_security import TransportSecuritySettings

from hippo.access import KeyRing, Principal, ScopedMemory
from hippo.api.auth import Unauthorized, authenticate
from hippo.api.config import ServerSettings
from hippo.api.errors import error_code
from hippo.api.guard import HttpPolicy, RequestGuard
from hippo.errors import AccessDenied, HippoError
from hippo.memory import Memory

CONTEXT_URI = "hippo://context"
INSTRUCTIONS = (
    "Durable memory about the user. The user-context block (resource hippo://context) is what is already "
    "known; search_memory recalls more; add_memory stores something durable (who the user is, what you made "
    "for them, what worked); delete_memory forgets (dry_run previews); clear empties the user's memory "
    "(dry run first, then call again with its confirm token)."
)
MAX_HITS = 50

F = TypeVar("F", bound=Callable[..., Any])


def _reraise_as(error: type[Exception], *, with_code: bool) -> Callable[[F], F]:
    """hippo's errors reach the client as the SDK's ``error`` with their message (the SDK hides
    unexpected ones); tools also carry the error's code."""

    def decorate(fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return fn(*args, **kwargs)
            except HippoError as exc:
                raise error(f"{error_code(exc)}: {exc}" if with_code else str(exc)) from exc

        return wrapper  # type: ignore[return-value]

    return decorate


_tool_errors = _reraise_as(ToolError, with_code=True)


def _confirm_token(space: str, ids: list[str]) -> str:
    return hashlib.sha256("\x00".join([space, *sorted(ids)]).encode()).hexdigest()[:16]


class HippoMCP:
    """The tools over one memory. ``principal``: the fixed caller (stdio); else ``keys`` (HTTP)."""

    def __init__(self, memory: Memory, *, principal: Principal | None = None, keys: KeyRing | None = None) -> None:
        if principal is None and keys is None:
            raise ValueError("give the principal (stdio) or the API keys (HTTP)")
        self.memory = memory
        self.principal = principal
        self.keys = keys
        self.server = _Server(name="hippo", instructions=INSTRUCTIONS)
        self.server.hippo = self
        self._register()

    def scoped(self, ctx: Context | None) -> ScopedMemory:
        principal = self.principal
        if principal is None:
            try:
                principal = authenticate(ctx.headers if ctx is not None else None, self.keys, required=True)
            except Unauthorized:
                raise AccessDenied("*", "call hippo without a valid API key (Authorization: Bearer or "
                                        "X-API-Key)") from None
        assert principal is not None  # required=True: a principal or Unauthorized
        return ScopedMemory(self.memory, principal)

    def _register(self) -> None:
        server = self.server

        @server.tool(description="Recall what memory holds about a question: clues (seed entities and "
                                 "surrogate queries) and passages ranked by Personalized PageRank, over "
                                 "everything the caller may read (their own memories and global knowledge).")
        @_tool_errors
        def search_memory(query: str, k: int = 5, n: int = 5, ctx: Context | None = None) -> dict[str, Any]:
            if not 1 <= k <= MAX_HITS:
                raise ToolError(f"k: must be from 1 to {MAX_HITS}, got {k}")
            result = self.scoped(ctx).recall(query, n=n, k=k)
            return {
                "strategy": result.strategy,
                "note": result.note,
                "clues": [c.model_dump(by_alias=True, exclude_none=True) for c in result.clues],
                "hits": [{"id": h.id, "title": h.title, "text": h.text, "score": h.score, "space": h.space,
                          "docId": h.doc_id} for h in result.hits],
            }

        @server.tool(description="Remember one durable thing about the user (a fact, preference, decision, "
                                 "or what was made for them). Same custom_id with new text = a new version.")
        @_tool_errors
        def add_memory(text: str, custom_id: str | None = None, label: str | None = None,
                       ctx: Context | None = None) -> dict[str, Any]:
            result = self.scoped(ctx).remember(text, custom_id=custom_id, label=label)
            return result.model_dump(by_alias=True, mode="json")

        @server.tool(description="Forget one memory by uid (or custom_id), reversibly. dry_run=true lists "
                                 "what would go without changing anything.")
        @_tool_errors
        def delete_memory(uid: str | None = None, custom_id: str | None = None, dry_run: bool = False,
                          ctx: Context | None = None) -> dict[str, Any]:
            result = self.scoped(ctx).forget(uid, custom_id=custom_id, dry_run=dry_run, reason="delete_memory")
            return result.model_dump(by_alias=True, mode="json")

        @server.tool(description="Forget everything in a user's memory (default: the caller's; another "
                                 "user's needs admin). Call with dry_run=true first; then call with "
                                 "dry_run=false and the confirm token the dry run returned.")
        @_tool_errors
        def clear(user_id: str | None = None, dry_run: bool = True, confirm: str | None = None,
                  ctx: Context | None = None) -> dict[str, Any]:
            scoped = self.scoped(ctx)
            preview = scoped.clear(user_id, dry_run=True)
            token = _confirm_token(preview.space, preview.documents)
            if dry_run:
                return {**preview.model_dump(by_alias=True), "confirm": token}
            if confirm != token:
                raise ToolError("confirm: call clear with dry_run=true first and pass its confirm token; "
                                "the space changed or the token is wrong, so nothing was cleared")
            return scoped.clear(user_id, dry_run=False).model_dump(by_alias=True)

        @server.tool(description="Add knowledge every user sees (the org space): product docs, FAQs, "
                                 "reference material. Admins only.")
        @_tool_errors
        def add_global_knowledge(text: str, title: str = "", id: str | None = None,
                                 ctx: Context | None = None) -> dict[str, Any]:
            result = self.scoped(ctx).index([{"id": id, "title": title, "text": text}], space="org")
            return {"id": result.ids[0], "passagesAdded": result.passages_added,
                    "passagesUnchanged": result.passages_unchanged, "entitiesAdded": result.entities_added,
                    "factsAdded": result.facts_added}

        @server.resource(CONTEXT_URI, name="user-context", mime_type="text/markdown",
                         description="What is known about the calling user: identity, work, goals, interests, "
                                     "relationships, recent (Markdown; empty when nothing is known).")
        def user_context() -> str:  # read by ``_Server.read_resource``, which knows the caller
            raise ResourceError("the user-context block needs the request")

        @server.resource(CONTEXT_URI + "/{user_id}", name="user-context-of", mime_type="text/markdown",
                         description="The user-context block of another user (admins, or grants on that space).")
        @_resource_errors
        def user_context_of(user_id: str, ctx: Context) -> str:
            return self.scoped(ctx).context(user_id)

    def context_block(self, ctx: Context | None) -> str:
        try:
            return self.scoped(ctx).context()
        except HippoError as exc:
            raise ResourceError(str(exc)) from exc


_resource_errors = _reraise_as(ResourceError, with_code=False)


class _Server(MCPServer):
    """MCPServer whose static context resource is read with the request (a static resource's
    function gets no Context, and the block depends on who asks)."""

    hippo: HippoMCP

    async def read_resource(self, uri: Any, context: Context | None = None) -> Any:
        if str(uri) == CONTEXT_URI:
            text = await anyio.to_thread.run_sync(self.hippo.context_block, context)
            return [ReadResourceContents(content=text, mime_type="text/markdown")]
        return await super().read_resource(uri, context)


def build_server(memory: Memory, *, principal: Principal | None = None, keys: KeyRing | None = None) -> MCPServer:
    return HippoMCP(memory, principal=principal, keys=keys).server


class ApiKeyGuard:
    """ASGI middleware: an HTTP request without a known API key gets 401 before MCP sees it."""

    def __init__(self, app: Any, keys: KeyRing) -> None:
        self.app = app
        self.keys = keys

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope.get("headers", [])}
            try:
                await anyio.to_thread.run_sync(partial(authenticate, headers, self.keys, required=True))
            except Unauthorized:
                from starlette.responses import JSONResponse

                response = JSONResponse(
                    {"error": "unauthorized: send a valid API key as 'Authorization: Bearer <key>' or 'X-API-Key'"},
                    status_code=401, headers={"WWW-Authenticate": "Bearer"})
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def http_app(memory: Memory, keys: KeyRing | None, *, principal: Principal | None = None,
             settings: ServerSettings | None = None, bound: str | None = None, path: str = "/mcp") -> RequestGuard:
    """The streamable-HTTP ASGI app: the Host/Origin/Content-Type guard (``hippo.api.guard``, the same
    as the RCP server's), then with ``keys`` the API-key guard, else every call acts for ``principal``."""
    settings = settings or ServerSettings()
    # The SDK's own Host check would refuse every non-loopback name; the shared guard decides instead.
    app: Any = build_server(memory, principal=principal, keys=keys).streamable_http_app(
        streamable_http_path=path, transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False))
    if keys is not None:
        app = ApiKeyGuard(app, keys)
    policy = HttpPolicy.build(settings.allowed_hosts, settings.allowed_origins, bound=bound,
                              allow_methods="GET, POST, DELETE",
                              allow_headers="Content-Type, Authorization, X-API-Key, Mcp-Session-Id, "
                                            "MCP-Protocol-Version, Last-Event-ID",
                              expose_headers="Mcp-Session-Id")
    return RequestGuard(app, policy)
