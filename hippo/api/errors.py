"""hippo's errors as the servers report them: the one table from ``hippo.errors`` to the wire.

Both servers ask here. The RCP server turns a ``Failure`` into its JSON-RPC error code
(``hippo.api.rcp.errors``); the MCP server reports ``error_code`` in its tool errors. The
table goes most specific first, as the error tree in ``hippo.errors`` is drawn.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

from hippo import errors
from hippo.api.auth import Unauthorized

Kind = Literal["invalid", "not_found", "conflict", "unavailable", "unauthorized"]


@dataclass(frozen=True)
class Failure:
    """What a client can act on: which kind of failure, and the hints for it (``data``)."""

    kind: Kind
    data: dict[str, Any] = field(default_factory=dict)


def error_code(exc: errors.HippoError) -> str:
    """``already_forgotten``, ``access_denied``, ... or the class name in snake case (``not_found``)."""
    code = getattr(exc, "code", None)
    return code if isinstance(code, str) else re.sub(r"(?<!^)(?=[A-Z])", "_", type(exc).__name__).lower()


def classify(exc: errors.HippoError) -> Failure:
    """The failure a hippo error is. ``InvalidInput`` names its field and limit."""
    if isinstance(exc, errors.InvalidInput):
        return Failure("invalid", {"field": exc.field, **({"limit": exc.limit} if exc.limit is not None else {})})
    if isinstance(exc, errors.NotFound):
        return Failure("not_found", {"retryable": False})
    if isinstance(exc, errors.Conflict | errors.AlreadyForgotten | errors.NotForgotten):
        data: dict[str, Any] = {"retryable": type(exc) is errors.Conflict}  # a retry cannot help the others
        if getattr(exc, "code", None):
            data["code"] = exc.code
        return Failure("conflict", data)
    if isinstance(exc, errors.StoreError | errors.EmbeddingModelError | errors.EmbeddingModelMismatch):
        return Failure("unavailable", {"retryable": True})
    if isinstance(exc, errors.AccessDenied):
        return Failure("unauthorized", {"space": exc.space, "right": exc.right, "retryable": False})
    if isinstance(exc, Unauthorized):
        return Failure("unauthorized", {"retryable": False})
    return Failure("invalid")
