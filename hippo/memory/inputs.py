"""What recall, retrieve, remember, forget and history take from a caller, checked: the first
bad field raises ``InvalidInput`` naming it (and the limit), before anything is read or written.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from typing import Any

from hippo.errors import InvalidInput
from hippo.ids import memory_id, text_hash
from hippo.limits import check_depth
from hippo.spaces import check_space

MAX_TEXT_BYTES = 8 * 1024
MAX_CUSTOM_ID_BYTES = 512
MAX_UID_BYTES = 1024  # a stored id: a space (200 characters at most), '/', a caller's id
MAX_LABEL_CHARS = 80
MAX_INSTRUCTIONS_BYTES = 4 * 1024
MAX_SHORT_CHARS = 200  # space, agent id, reason
MAX_PROPS_BYTES = 16 * 1024
MAX_QUERY_CHARS = 4_000
MAX_K = 1_000  # hits, clues and candidates one call may ask for
MAX_TOKEN_BUDGET = 1_000_000


def space_set(spaces: Iterable[str] | None) -> frozenset[str] | None:
    """The spaces a caller may read, as a set (``None``: every space)."""
    return None if spaces is None else frozenset(spaces)


def check_query(query: str) -> str:
    if not isinstance(query, str):
        raise InvalidInput("query", f"must be a string, got {type(query).__name__}")
    if not query.strip():
        raise InvalidInput("query", "is empty")
    if len(query) > MAX_QUERY_CHARS:
        raise InvalidInput("query", f"has {len(query)} characters; the limit is {MAX_QUERY_CHARS}",
                           limit=MAX_QUERY_CHARS)
    return query.strip()


def check_count(name: str, value: int, high: int = MAX_K) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= high:
        raise InvalidInput(name, f"must be an integer from 1 to {high}, got {value!r}", limit=high)


def utf8_size(field: str, value: str, limit: int) -> int:
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise InvalidInput(field, f"is not valid UTF-8 (at character {exc.start})") from exc
    if size > limit:
        raise InvalidInput(field, f"has {size} bytes; the limit is {limit}", limit=limit)
    return size


def text(field: str, value: Any, limit: int, *, empty_ok: bool = False) -> str:
    if not isinstance(value, str):
        raise InvalidInput(field, f"must be a string, got {type(value).__name__}")
    utf8_size(field, value, limit)
    if not empty_ok and not value.strip():
        raise InvalidInput(field, "is empty")
    return value


def unit(field: str, value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0 \
            or math.isnan(value):
        raise InvalidInput(field, f"must be a number from 0 to 1, got {value!r}", limit=1.0)
    return float(value)


def props(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidInput("props", f"must be an object, got {type(value).__name__}")
    check_depth("props", value)
    try:
        encoded = json.dumps(value, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInput("props", f"must be JSON-serializable: {exc}") from exc
    utf8_size("props", encoded, MAX_PROPS_BYTES)
    return json.loads(encoded)


def default_label(text: str) -> str:
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return first if len(first) <= MAX_LABEL_CHARS else first[: MAX_LABEL_CHARS - 1] + "…"


def memory_uid(space: str, custom_id: str | None, text: str) -> str:
    return memory_id(space, f"id:{custom_id}") if custom_id is not None else memory_id(space, f"text:{text_hash(text)}")


def target_uid(uid: str | None, custom_id: str | None, space: str) -> tuple[str, str | None]:
    """The uid named, and the space it must be in when it was named by custom id."""
    if uid is None and custom_id is None:
        raise InvalidInput("uid", "give uid or custom_id")
    if uid is not None:
        uid = text("uid", uid, MAX_UID_BYTES)
    if custom_id is None:
        return uid, None
    space = check_space("space", space)
    named = memory_uid(space, text("custom_id", custom_id, MAX_CUSTOM_ID_BYTES), "")
    if uid is not None and uid != named:
        raise InvalidInput("custom_id", f"names memory {named} in space {space!r}, not uid {uid!r}: "
                                        "give one of uid and custom_id, or both naming the same memory")
    return named, space
