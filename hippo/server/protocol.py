"""JSON-RPC framing and dispatch for one connection, on the ``rcp`` SDK's ``Server``.

The SDK owns the handshake (``initialize`` first; ``info``, ``ping``,
``shutdown`` any time), capability gating, the count checks and notification
rules. This subclass adds what the SDK lacks or gets wrong:

- parsing: deep nesting (``RecursionError`` escaped the SDK's ``handle_line``),
  invalid UTF-8 and the non-JSON ``NaN``/``Infinity`` are parse errors (-32700);
- params: a value nested deeper than ``hippo.limits.MAX_JSON_DEPTH`` or a lone
  surrogate is -32602 naming the field (and the limit), before any handler,
  the SDK's own (``ping`` echoes its nonce) included;
- the envelope: an ``id`` that is not a string or number, or a ``jsonrpc``
  other than "2.0", is -32600 (the SDK echoed any id); ``params`` that is not
  an object is -32602 (the SDK replaced it with ``{}``, so its own check never
  fired);
- batches are capped (spec 11 allows -32602);
- ``x-hippo/*`` extension methods, gated on the ``x-hippo`` capability (the
  SDK rejects any hook outside its method table);
- engine errors map to RCP codes with ``error.data`` (the SDK turned every
  exception into -32603 with the exception text); a server bug, in a handler or
  in encoding its result, is -32603 with a request id and one log line
  (``hippo.server.errors.internal``), and the transport goes on.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from typing import Any

import rcp
from rcp import Errc, Method
from rcp._server import _validate_params  # the SDK's shared count checks: same rules as every RCP SDK
from rcp._types import CAP_FOR_METHOD

from hippo.limits import MAX_JSON_DEPTH
from hippo.server.errors import translate

EXTENSION_PREFIX = "x-hippo/"
EXTENSION_CAPABILITY = "x-hippo"

Call = Callable[[dict[str, Any]], dict[str, Any]]
SDK_METHODS = frozenset({Method.INITIALIZE, Method.INFO, Method.PING, Method.SHUTDOWN})


class _NotAnObject(dict):
    """Stands in for ``params`` that were not an object, so dispatch can refuse them after gating."""

    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind


def _error(id_: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": id_, "error": error}


def _data(problem: tuple[str, str, int | None]) -> dict[str, Any]:
    field, _, limit = problem
    return {"field": field} if limit is None else {"field": field, "limit": limit}


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not valid JSON")


def parse(data: bytes | str) -> tuple[Any, dict[str, Any] | None]:
    """The message, or a parse-error response."""
    try:
        return json.loads(data, parse_constant=_reject_constant), None
    except RecursionError:
        return None, _error(None, Errc.PARSE_ERROR, "JSON nested too deeply")
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError
        return None, _error(None, Errc.PARSE_ERROR, f"invalid JSON: {exc}")


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return 0.0  # spec 4.6: a finite sentinel, never NaN/Infinity on the wire
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def dumps(message: Any) -> str:
    """Compact, single-line JSON. ASCII-escaped: an echoed lone surrogate cannot break the encoding."""
    try:
        return json.dumps(message, allow_nan=False, separators=(",", ":"))
    except ValueError:  # NaN or Infinity somewhere: replace, then encode
        return json.dumps(_finite(message), allow_nan=False, separators=(",", ":"))


def frame(reply: Any) -> str:
    """The wire text of a reply (a response or a batch of them); "" for none. Never raises: a
    response that cannot be encoded (a server bug) becomes a -32603 with the same id."""
    if reply is None:
        return ""
    if isinstance(reply, list):
        return "[" + ",".join(frame(r) for r in reply) + "]"
    try:
        return dumps(reply)
    except Exception as exc:  # noqa: BLE001 - RecursionError, TypeError, ValueError: still an answer
        id_ = reply.get("id") if isinstance(reply, dict) else None
        error = translate(exc, where="encoding the reply")
        return dumps(_error(id_ if _valid_id(id_) else None, error.code, error.message, error.data))


def _valid_id(id_: Any) -> bool:
    return not isinstance(id_, bool) and isinstance(id_, str | int | float)


def check_params(params: dict[str, Any]) -> tuple[str, str, int | None] | None:
    """The first thing wrong in ``params`` that no model checks: (field, message, limit).

    A string that is not valid Unicode (a lone surrogate JSON let through), or a value
    nested deeper than ``MAX_JSON_DEPTH``, counted from each param and from each
    document's ``meta`` (so the error names ``documents[2].meta``). Iterative: a value
    too deep for Python's recursion is measured too.
    """
    stack: list[tuple[Any, str, str, int]] = [(v, str(k), str(k), 1) for k, v in params.items()]
    while stack:
        item, path, root, depth = stack.pop()
        if isinstance(item, str):
            if not _encodable(item):
                return path, "is not valid Unicode (a lone surrogate)", None
            continue
        if not isinstance(item, dict | list):
            continue
        if depth > MAX_JSON_DEPTH:
            return root, f"nests more than {MAX_JSON_DEPTH} levels of objects and arrays; the limit is " \
                         f"{MAX_JSON_DEPTH}", MAX_JSON_DEPTH
        if isinstance(item, list):
            stack.extend((v, f"{path}[{i}]", root, depth + 1) for i, v in enumerate(item))
            continue
        for key, value in item.items():
            if not _encodable(key):
                return f"{path}.{key!a}", "is not valid Unicode (a lone surrogate)", None
            child = f"{path}.{key}"
            if key == "meta" and root == "documents" and depth == 2:  # documents[i].meta: a value of its own
                stack.append((value, child, child, 1))
            else:
                stack.append((value, child, root, depth + 1))
    return None


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class Connection(rcp.Server):
    """One client's view of the server: its handshake state and its bound handlers.

    ``calls`` are the core handlers bound to this caller; ``extensions`` the
    ``x-hippo/*`` ones. ``repeatable_handshake`` answers ``initialize`` again
    instead of -32600, for HTTP where every request is its own connection.
    """

    def __init__(self, *, info: Mapping[str, str], capabilities: Mapping[str, Any], conformance: str,
                 calls: Mapping[str, Call], extensions: Mapping[str, Call], initialized: bool = False,
                 repeatable_handshake: bool = False, max_batch: int = 64,
                 on_initialize: Callable[[], str | None] | None = None) -> None:
        super().__init__()
        self._info = dict(info)
        self._caps = dict(capabilities)
        self._conformance = conformance
        self._handlers = dict(calls)
        self._extensions = dict(extensions)
        self._initialized = initialized
        self._repeatable = repeatable_handshake
        self._max_batch = max_batch
        self._on_initialize = on_initialize
        self.shutdown_requested = False

    @property
    def initialized(self) -> bool:
        return self._initialized

    # -- one request -------------------------------------------------------------------

    def handle(self, request: Any) -> dict[str, Any] | None:
        if isinstance(request, dict):
            bad = self._envelope(request)
            if bad is not None:
                return bad
            params = request.get("params")
            if params is None:
                request = {**request, "params": {}}
            elif not isinstance(params, dict):
                request = {**request, "params": _NotAnObject(type(params).__name__)}
            method = request.get("method")
            if isinstance(method, str) and method in SDK_METHODS and isinstance(params, dict):
                bad = check_params(params)  # the SDK echoes some params (ping's nonce): bound them first
                if bad is not None:
                    return _error(request.get("id") if _valid_id(request.get("id")) else None,
                                  Errc.INVALID_PARAMS, f"{bad[0]}: {bad[1]}", _data(bad))
            if request.get("method") == Method.INITIALIZE and "id" in request:
                return self._initialize(request)
            if request.get("method") == Method.SHUTDOWN and "id" in request:
                self.shutdown_requested = True
        return super().handle(request)

    @staticmethod
    def _envelope(request: dict[str, Any]) -> dict[str, Any] | None:
        if "id" in request:
            id_ = request["id"]
            if id_ is None or isinstance(id_, bool) or not isinstance(id_, str | int | float):
                return _error(None, Errc.INVALID_REQUEST, "'id' must be a string or a number")
        if "jsonrpc" in request and request["jsonrpc"] != "2.0":
            return _error(request.get("id"), Errc.INVALID_REQUEST, "'jsonrpc' must be \"2.0\"")
        return None

    def _initialize(self, request: dict[str, Any]) -> dict[str, Any] | None:
        before = self._initialized
        if self._repeatable:
            self._initialized = False
        reply = super().handle(request)
        if reply is None or "error" in reply:
            self._initialized = before
            return reply
        token = self._on_initialize() if self._on_initialize else None
        if token:
            reply["result"].setdefault("_meta", {})["session"] = token
        return reply

    def _dispatch(self, id_: Any, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method.startswith(EXTENSION_PREFIX):
            call = self._extensions.get(method)
            if call is None:
                return _error(id_, Errc.UNKNOWN_METHOD, f"unknown method '{method}'")
            if EXTENSION_CAPABILITY not in self._caps:
                return _error(id_, Errc.CAPABILITY_MISSING, f"capability '{EXTENSION_CAPABILITY}' not supported")
        else:
            capability = CAP_FOR_METHOD.get(method)
            if capability is None:
                return _error(id_, Errc.UNKNOWN_METHOD, f"unknown method '{method}'")
            call = self._handlers.get(method)
            if call is None or capability.value not in self._caps:
                return _error(id_, Errc.CAPABILITY_MISSING, f"capability '{capability.value}' not supported")
        # Spec 12: params are checked after gating.
        if isinstance(params, _NotAnObject):
            return _error(id_, Errc.INVALID_PARAMS, f"params must be an object, got {params.kind}",
                          {"field": "params"})
        params = {key: value for key, value in params.items() if value is not None}  # spec 4.6: null = absent
        unsound = check_params(params)
        if unsound is not None:
            return _error(id_, Errc.INVALID_PARAMS, f"{unsound[0]}: {unsound[1]}", _data(unsound))
        bad = _validate_params(method, params)
        if bad is not None:
            return _error(id_, *bad)
        try:
            result = call(params)
        except Exception as exc:  # noqa: BLE001 - every failure becomes a JSON-RPC error
            error = translate(exc, where=method)
            return _error(id_, error.code, error.message, error.data)
        return {"jsonrpc": "2.0", "id": id_, "result": result if result is not None else {}}

    # -- one message (a request or a batch) ---------------------------------------------

    def handle_message(self, message: Any) -> Any:
        """The response object (or list, for a batch), or None when nothing is answered."""
        if isinstance(message, list):
            if not message:
                return _error(None, Errc.INVALID_REQUEST, "empty batch")
            if len(message) > self._max_batch:
                return _error(None, Errc.INVALID_PARAMS,
                              f"batch has {len(message)} requests; the limit is {self._max_batch}",
                              {"field": "batch", "limit": self._max_batch})
            replies = [reply for reply in (self._safe(m) for m in message) if reply is not None]
            return replies or None
        return self._safe(message)

    def _safe(self, request: Any) -> dict[str, Any] | None:
        try:
            return self.handle(request)
        except Exception as exc:  # noqa: BLE001 - a bug in framing must still get an answer
            if isinstance(request, dict) and "id" not in request:
                return None  # a notification is never answered, not even with an error
            method = request.get("method") if isinstance(request, dict) else None
            error = translate(exc, where=method if isinstance(method, str) else "framing")
            id_ = request.get("id") if isinstance(request, dict) else None
            return _error(id_ if _valid_id(id_) else None, error.code, error.message, error.data)

    def handle_bytes(self, data: bytes | str) -> str:
        """A framed reply for one stdio line or HTTP body ("" when nothing is answered). Never raises."""
        message, failed = parse(data)
        if failed is not None:
            return frame(failed)
        try:
            reply = self.handle_message(message)
        except Exception as exc:  # noqa: BLE001 - the transport must answer and stay up
            error = translate(exc, where="dispatch")
            reply = _error(None, error.code, error.message, error.data)
        return frame(reply)
