"""Bounds on the JSON callers send: how deep it may nest.

Metadata, memory props and filters are stored or walked recursively; a value
nested hundreds of levels deep would be accepted and then break every read
of it. One limit applies to every such value.
"""

from __future__ import annotations

from typing import Any

from hippo.errors import InvalidInput

MAX_JSON_DEPTH = 32
"""Containers (objects, arrays) nested inside one caller value, the outermost counted."""


def json_depth(value: Any, stop: int = MAX_JSON_DEPTH + 1) -> int:
    """How many containers deep ``value`` nests (a scalar is 0), counted up to ``stop``.

    Iterative, so a value too deep for Python's recursion limit is measured too.
    """
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        if deepest >= stop:
            return deepest
        stack.extend((child, depth + 1) for child in children)
    return deepest


def check_depth(field: str, value: Any, limit: int = MAX_JSON_DEPTH) -> Any:
    """``value``, or ``InvalidInput`` naming the field and the limit."""
    if json_depth(value, limit + 1) > limit:
        raise InvalidInput(field, f"nests more than {limit} levels of objects and arrays; the limit is {limit}",
                           limit=limit)
    return value
