"""What an HTTP request must look like before a server reads it: Host, Origin, Content-Type.

Shared by the RCP server (``/rcp``) and the MCP server (``/mcp``). A web page
the user visits can make the browser POST to ``127.0.0.1``; three checks stop it:

- ``Host`` outside the allow-list (the loopback names, the address bound to,
  and ``--allowed-host`` / ``HIPPO_SERVER_ALLOWED_HOSTS``): 421. This is what
  defeats DNS rebinding, where ``evil.example`` resolves to 127.0.0.1.
- ``Origin`` present and outside ``--allowed-origin`` /
  ``HIPPO_SERVER_ALLOWED_ORIGINS`` (empty by default): 403. Browsers send it
  on every cross-site POST; tools and SDK clients do not.
- a POST whose ``Content-Type`` is not ``application/json``: 415. A
  ``text/plain`` POST is a CORS-simple request the browser sends without asking.

No CORS header is sent unless origins are configured; then an allowed origin
gets ``Access-Control-Allow-Origin`` and its preflight is answered here.
Bodies of refusals are JSON-RPC errors with ``id: null`` (both protocols speak it).
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
ANY = "*"
INVALID_REQUEST = -32600


def host_name(header: str) -> str:
    """The host of a ``Host`` header, without port or brackets, lowercase (``[::1]:80`` -> ``::1``)."""
    value = header.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value
    if value.count(":") == 1:
        value = value.split(":", 1)[0]
    return value.rstrip(".")


def is_loopback(host: str) -> bool:
    name = host_name(host)
    if name in LOOPBACK_HOSTS:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _origin(value: str) -> str:
    return value.strip().lower().rstrip("/")


@dataclass(frozen=True)
class HttpPolicy:
    """The allow-lists. ``bound``: the address the server listens on (allowed as a Host when
    it is a concrete address; 0.0.0.0 and :: are not names a client uses)."""

    allowed_hosts: frozenset[str] = frozenset()
    allowed_origins: frozenset[str] = frozenset()
    allow_methods: str = "POST"
    allow_headers: str = "Content-Type, Authorization, X-API-Key, RCP-Session"
    expose_headers: str = ""

    @classmethod
    def build(cls, hosts: Iterable[str] = (), origins: Iterable[str] = (), *, bound: str | None = None,
              **options: Any) -> HttpPolicy:
        allowed = {host_name(h) if h.strip() != ANY else ANY for h in hosts if h.strip()}
        if bound and host_name(bound) not in ("0.0.0.0", "::", ""):
            allowed.add(host_name(bound))
        return cls(allowed_hosts=frozenset(LOOPBACK_HOSTS | allowed),
                   allowed_origins=frozenset(_origin(o) for o in origins if o.strip()), **options)

    def host_allowed(self, header: str | None) -> bool:
        return ANY in self.allowed_hosts or (header is not None and host_name(header) in self.allowed_hosts)

    def origin_allowed(self, origin: str) -> bool:
        return ANY in self.allowed_origins or _origin(origin) in self.allowed_origins


def _is_json(content_type: str | None) -> bool:
    return content_type is not None and content_type.split(";", 1)[0].strip().lower() == "application/json"


@dataclass
class RequestGuard:
    """ASGI middleware enforcing an ``HttpPolicy`` in front of ``app``."""

    app: Any
    policy: HttpPolicy = field(default_factory=HttpPolicy)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        if not self.policy.host_allowed(headers.get("host")):
            await _refuse(send, 421, f"Host {headers.get('host')!r} is not served here; add it with --allowed-host "
                                     "or HIPPO_SERVER_ALLOWED_HOSTS")
            return
        origin = headers.get("origin")
        if origin is not None and not self.policy.origin_allowed(origin):
            await _refuse(send, 403, f"Origin {origin!r} may not call this server; allow it with --allowed-origin "
                                     "or HIPPO_SERVER_ALLOWED_ORIGINS")
            return
        cors = self._cors(origin)
        if scope["method"] == "OPTIONS" and origin is not None and "access-control-request-method" in headers:
            await _send(send, 204, b"", [*cors, (b"access-control-allow-methods", self.policy.allow_methods.encode()),
                                         (b"access-control-allow-headers", self.policy.allow_headers.encode()),
                                         (b"access-control-max-age", b"600")])
            return
        if scope["method"] == "POST" and not _is_json(headers.get("content-type")):
            await _refuse(send, 415, f"Content-Type must be application/json, got "
                                     f"{headers.get('content-type', 'none')!r}", cors)
            return
        if not cors:
            await self.app(scope, receive, send)
            return

        async def send_with_cors(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *cors]}
            await send(message)

        await self.app(scope, receive, send_with_cors)

    def _cors(self, origin: str | None) -> list[tuple[bytes, bytes]]:
        if origin is None or not self.policy.allowed_origins:
            return []
        found = [(b"access-control-allow-origin", origin.encode("latin-1")), (b"vary", b"Origin")]
        if self.policy.expose_headers:
            found.append((b"access-control-expose-headers", self.policy.expose_headers.encode()))
        return found


async def _refuse(send: Any, status: int, message: str, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": INVALID_REQUEST, "message": message}})
    await _send(send, status, body.encode(), [(b"content-type", b"application/json"), *(headers or [])])


async def _send(send: Any, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-length", str(len(body)).encode()), *headers]})
    await send({"type": "http.response.body", "body": body})


def exposure_refusal(host: str, *, keys: bool, insecure: bool, command: str) -> str | None:
    """Why not to serve on ``host``, or None: beyond loopback, nobody may be anonymous admin."""
    if keys or insecure or is_loopback(host):
        return None
    return (f"refusing to serve {host} without API keys (every caller would be admin): issue one with "
            f"'hippo keys issue --user NAME --store STORE' (or set HIPPO_API_KEYS), or pass --insecure-no-auth "
            f"to {command} if you mean it")
