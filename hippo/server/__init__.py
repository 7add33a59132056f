"""The Retrieval Context Protocol (RCP/1) server: hippo over JSON-RPC, on stdio and HTTP.

``hippo serve --stdio`` or ``hippo serve --http HOST:PORT`` (path ``/rcp``).
The ``rcp`` SDK carries the wire vocabulary, the handshake and capability
gating; this package maps the protocol's methods onto a ``hippo.Memory``.
``Service`` and ``open_service`` load on first use, so ``hippo.server.guard``
(shared with the MCP server) imports without the ``rcp`` SDK.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Service", "open_service"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from hippo.server import app

        return getattr(app, name)
    raise AttributeError(f"module 'hippo.server' has no attribute {name!r}")
