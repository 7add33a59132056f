"""Engine errors -> RCP error codes, with ``error.data`` naming the field and the limit."""

from __future__ import annotations

import logging
import uuid
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from rcp import Errc, RcpError

from hippo import errors as hippo_errors

log = logging.getLogger("hippo.server")


def invalid(field: str, message: str, *, limit: Any = None) -> RcpError:
    """-32602 with ``data.field`` (and ``data.limit`` when there is one)."""
    data: dict[str, Any] = {"field": field}
    if limit is not None:
        data["limit"] = limit
    return RcpError(Errc.INVALID_PARAMS, f"{field}: {message}", data)


def too_large(field: str, message: str, *, limit: int) -> RcpError:
    return RcpError(Errc.PAYLOAD_TOO_LARGE, f"{field}: {message}", {"field": field, "limit": limit})


def unsupported(option: str, message: str) -> RcpError:
    return RcpError(Errc.OPTION_UNSUPPORTED, f"{option}: {message}", {"option": option})


def not_found(field: str, value: str, what: str) -> RcpError:
    return RcpError(Errc.NOT_FOUND, f"{field}: no {what} {value!r}", {"field": field})


def from_validation(exc: ValidationError, prefix: str = "") -> RcpError:
    """The first pydantic error as -32602, its location as the field path (``documents[2].text``)."""
    first = exc.errors()[0]
    path = ""
    for part in first["loc"]:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    field = f"{prefix}{path}" if path else (prefix.rstrip(".") or "params")
    message = first["msg"]
    if first["type"] == "missing":
        message = "is required"
    limit = (first.get("ctx") or {}).get("le") or (first.get("ctx") or {}).get("max_length")
    return invalid(field, message, limit=limit)


def translate(exc: BaseException, where: str = "a request") -> RcpError:
    """Any exception a handler raised, as the RCP error a client can act on."""
    if isinstance(exc, RcpError):
        return exc
    if isinstance(exc, ValidationError):
        return from_validation(exc)
    if isinstance(exc, hippo_errors.InvalidInput):
        return invalid(exc.field, str(exc).removeprefix(f"{exc.field}: "), limit=exc.limit)
    if isinstance(exc, hippo_errors.NotFound):
        return RcpError(Errc.NOT_FOUND, str(exc), {"retryable": False})
    if isinstance(exc, hippo_errors.Conflict | hippo_errors.AlreadyForgotten | hippo_errors.NotForgotten):
        data: dict[str, Any] = {"retryable": type(exc).__name__ == "Conflict"}
        if getattr(exc, "code", None):
            data["code"] = exc.code
        return RcpError(Errc.CONFLICT, str(exc), data)
    if isinstance(exc, hippo_errors.StoreError | hippo_errors.EmbeddingModelError
                  | hippo_errors.EmbeddingModelMismatch):
        return RcpError(Errc.BACKEND_UNAVAILABLE, str(exc), {"retryable": True})
    if isinstance(exc, hippo_errors.AccessDenied):
        return RcpError(Errc.UNAUTHORIZED, str(exc), {"space": exc.space, "right": exc.right, "retryable": False})
    if isinstance(exc, hippo_errors.HippoError):
        return RcpError(Errc.INVALID_PARAMS, str(exc))
    return internal(exc, where)


def internal(exc: BaseException, where: str = "a request") -> RcpError:
    """-32603 for a server bug, logged as one line under a request id the client is given too.

    One line, not a traceback: a failure as deep as Python's recursion limit would
    otherwise write thousands of lines per request. The traceback is at DEBUG level.
    """
    request_id = uuid.uuid4().hex[:12]
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    at = f" at {Path(tb.tb_frame.f_code.co_filename).name}:{tb.tb_lineno}" if tb is not None else ""
    text = " ".join(str(exc).split())[:200]
    log.error("internal error in %s (request %s): %s%s%s", where, request_id, type(exc).__name__,
              f": {text}" if text else "", at)
    log.debug("request %s traceback", request_id, exc_info=exc)
    return RcpError(Errc.INTERNAL_ERROR, f"internal error ({type(exc).__name__}); the server log has details "
                                         f"under request {request_id}", {"requestId": request_id, "retryable": False})
