"""RCP over HTTP: Starlette on uvicorn, ``POST /rcp`` and ``POST /rcp/<method>`` (spec 5.2).

Every well-formed JSON-RPC reply, error or not, is HTTP 200 (a server bug
too: -32603, never a bare 500); a request that only carries notifications
gets 204. Before any of that, ``hippo.server.guard`` answers 421/403/415 to
a foreign Host, a foreign Origin or a body that is not JSON, and a caller
without a known key gets 401 when keys are configured. Engine calls run in a
worker thread pool (``HIPPO_SERVER_THREADS``) so the event loop keeps
accepting clients.

The handshake over HTTP: each request is its own connection, so the server
remembers who initialized. ``initialize`` answers every time and returns a
token in ``result._meta.session``; a request carrying it in the
``RCP-Session`` header is initialized iff the token is known, one without the
header iff its caller (the principal, or the anonymous caller) has
initialized before. Until then a gated method is -32001.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio
from rcp import Errc
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from hippo.server.app import Service
from hippo.server.auth import Principal, Unauthorized, resolve_principal
from hippo.server.errors import translate
from hippo.server.guard import HttpPolicy, RequestGuard
from hippo.server.protocol import _error, dumps, frame, parse

SESSION_HEADER = "rcp-session"
MAX_TOKENS = 10_000


class Handshakes:
    """Who has initialized: handshake tokens (newest kept) and callers."""

    def __init__(self) -> None:
        self._tokens: OrderedDict[str, str | None] = OrderedDict()
        self._callers: set[str | None] = set()
        self._lock = threading.Lock()

    @staticmethod
    def _caller(principal: Principal | None) -> str | None:
        return principal.id if principal else None

    def begin(self, principal: Principal | None) -> str:
        token = secrets.token_urlsafe(18)
        with self._lock:
            self._tokens[token] = self._caller(principal)
            self._callers.add(self._caller(principal))
            while len(self._tokens) > MAX_TOKENS:
                self._tokens.popitem(last=False)
        return token

    def initialized(self, principal: Principal | None, token: str | None) -> bool:
        with self._lock:
            if token is not None:
                return token in self._tokens and self._tokens[token] == self._caller(principal)
            return self._caller(principal) in self._callers


class _TooLarge(Exception):
    pass


async def _body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _TooLarge(int(declared))
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _TooLarge(size)
        chunks.append(chunk)
    return b"".join(chunks)


def _json(reply: Any) -> Response:
    return Response(frame(reply), media_type="application/json")


def _path_mismatch(message: Any, method: str) -> Any:
    """Spec 5.2: the method in the URL must be the body's; a member that differs is -32600."""
    def check(request: Any) -> Any:
        if isinstance(request, dict) and request.get("method") != method:
            id_ = request.get("id")
            return _error(id_ if isinstance(id_, str | int | float) and not isinstance(id_, bool) else None,
                          Errc.INVALID_REQUEST, f"path names method '{method}', body names "
                          f"'{request.get('method')}'")
        return None
    if isinstance(message, list):
        return [check(m) for m in message]
    return check(message)


def create_app(service: Service, *, bound: str | None = None) -> RequestGuard:
    """The ASGI app: ``/rcp`` behind the Host/Origin/Content-Type guard. ``bound``: the address served on."""
    handshakes = Handshakes()
    limiter = anyio.CapacityLimiter(service.settings.threads)
    limit = service.settings.max_body_bytes

    async def rpc(request: Request) -> Response:
        try:
            return await answer(request)
        except Exception as exc:  # noqa: BLE001 - never a bare 500: a JSON-RPC error, and the server stays up
            error = translate(exc, where="the HTTP transport")
            return _json(_error(None, error.code, error.message, error.data))

    async def answer(request: Request) -> Response:
        try:
            principal = resolve_principal(request.headers, service.keys, required=service.keys_required)
        except Unauthorized as exc:
            return Response(dumps(_error(None, Errc.UNAUTHORIZED, str(exc), {"retryable": False})), status_code=401,
                            media_type="application/json", headers={"WWW-Authenticate": "Bearer"})
        try:
            body = await _body(request, limit)
        except _TooLarge as exc:
            return _json(_error(None, Errc.PAYLOAD_TOO_LARGE, f"request body is {exc.args[0]} bytes or more; "
                                f"the limit is {limit}", {"field": "body", "limit": limit}))
        message, failed = parse(body)
        if failed is not None:
            return _json(failed)
        token = request.headers.get(SESSION_HEADER)
        connection = service.connection(
            service.context(principal), initialized=handshakes.initialized(principal, token),
            repeatable_handshake=True, on_initialize=lambda: handshakes.begin(principal))
        path_method = request.path_params.get("method")
        if path_method:
            mismatched = _path_mismatch(message, path_method)
            if isinstance(message, list):
                replies = [m for m in mismatched if m is not None]
                message = [m for m, bad in zip(message, mismatched, strict=True) if bad is None]
                if not message:
                    return _json(replies)
                reply = await anyio.to_thread.run_sync(connection.handle_message, message, limiter=limiter)
                replies += reply or []
                return _json(replies) if replies else Response(status_code=204)
            if mismatched is not None:
                return _json(mismatched)
        reply = await anyio.to_thread.run_sync(connection.handle_message, message, limiter=limiter)
        return Response(status_code=204) if reply is None else _json(reply)

    app = Starlette(routes=[Route("/rcp", rpc, methods=["POST"]), Route("/rcp/{method:path}", rpc, methods=["POST"])])
    s = service.settings
    return RequestGuard(app, HttpPolicy.build(s.allowed_hosts, s.allowed_origins, bound=bound))


def serve(service: Service, host: str, port: int, *, log_level: str = "warning") -> None:
    import uvicorn

    uvicorn.run(create_app(service, bound=host), host=host, port=port, log_level=log_level, access_log=False)


@contextmanager
def background(service: Service, host: str = "127.0.0.1", port: int = 0,
               startup_timeout: float = 30.0) -> Iterator[str]:
    """Serve in a thread of this process (port 0: any free one); yields the ``.../rcp`` URL."""
    import uvicorn

    server = uvicorn.Server(uvicorn.Config(create_app(service, bound=host), host=host, port=port, log_level="warning",
                                           access_log=False, lifespan="off"))
    thread = threading.Thread(target=server.run, name="hippo-rcp-http", daemon=True)
    thread.start()
    deadline = time.monotonic() + startup_timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError(f"the RCP server did not start on {host}:{port}")
        time.sleep(0.01)
    bound = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://{host}:{bound}/rcp"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
