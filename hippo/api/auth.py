"""Who is calling, from a request's transport headers: the one key check both servers use.

The key is ``Authorization: Bearer <key>`` or ``X-API-Key``; keys live in ``HIPPO_API_KEYS``
or the store (``hippo.access.keys``). A request without a key is anonymous (``None``:
served as an admin by the RCP server) unless keys are required: a key file is configured,
keys were issued into the store, or ``HIPPO_REQUIRE_API_KEY``. The MCP server over HTTP
always requires one.
"""

from __future__ import annotations

from collections.abc import Mapping

from hippo.access import KeyRing, Principal, key_from_headers
from hippo.errors import HippoError

MISSING_KEY = "this server needs an API key: send 'Authorization: Bearer <key>' or 'X-API-Key'"
UNKNOWN_KEY = "unknown API key"


class Unauthorized(HippoError):
    """No API key where one is required, or a key no one issued."""


def authenticate(headers: Mapping[str, str] | None, keys: KeyRing | None = None, *,
                 required: bool = False) -> Principal | None:
    """The principal behind a request's headers; ``None`` (anonymous) when it sent no key and
    none is ``required``. Raises ``Unauthorized`` for a missing required key or an unknown one."""
    key = key_from_headers(headers)
    if key is None:
        if required:
            raise Unauthorized(MISSING_KEY)
        return None
    principal = keys.principal_for_key(key) if keys is not None else None
    if principal is None:
        raise Unauthorized(UNKNOWN_KEY)
    return principal
