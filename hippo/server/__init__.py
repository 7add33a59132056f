"""The Retrieval Context Protocol (RCP/1) server: hippo over JSON-RPC, on stdio and HTTP.

``hippo serve --stdio`` or ``hippo serve --http HOST:PORT`` (path ``/rcp``).
The ``rcp`` SDK carries the wire vocabulary, the handshake and capability
gating; this package maps the protocol's methods onto a ``hippo.Memory``.
"""

from hippo.server.app import Service, open_service

__all__ = ["Service", "open_service"]
