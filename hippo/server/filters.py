"""Metadata filters (spec section 8): validated by the SDK, evaluated here against a hit's record.

A hit's record is its document's fields (``docId``, ``title``, ``source``,
``space``, ``kind``) plus the document's own metadata under ``meta.<key>``
(``meta.year``, ``meta.lang.code`` for nested objects).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rcp import filter as rcp_filter

from hippo.server.errors import invalid

FIELDS = {"docId": "keyword", "title": "keyword", "source": "keyword", "space": "keyword", "kind": "keyword"}
META_PREFIX = "meta."
OPERATORS = sorted(rcp_filter.ALL_OPS)
MAX_DEPTH = 16
_MISSING = object()

Tree = dict[str, Any]


def validate(node: Any) -> Tree | None:
    """The normalized tree, or -32602 naming the offending path."""
    tree = rcp_filter.validate(node, fields=None, operators=OPERATORS, max_depth=MAX_DEPTH)
    if tree is not None:
        _check(tree, "filter")
    return tree


def _check(node: Tree, path: str) -> None:
    # What the SDK's validator lets through: empty and/or arrays (spec 8 says -32602)
    # and fields we do not have.
    for combinator in ("and", "or"):
        if combinator in node:
            if not node[combinator]:
                raise invalid(f"{path}.{combinator}", "is an empty array")
            for i, child in enumerate(node[combinator]):
                _check(child, f"{path}.{combinator}[{i}]")
            return
    if "not" in node:
        _check(node["not"], f"{path}.not")
        return
    field = node["field"]
    if field not in FIELDS and not (field.startswith(META_PREFIX) and len(field) > len(META_PREFIX)):
        raise invalid(f"{path}.field", f"unknown field {field!r}; filterable: {', '.join(FIELDS)} "
                                       f"and {META_PREFIX}<key> for document metadata")


def _lookup(record: Mapping[str, Any], field: str) -> Any:
    if not field.startswith(META_PREFIX):
        return record.get(field, _MISSING)
    value: Any = record.get("meta", {})
    for part in field[len(META_PREFIX):].split("."):
        if not isinstance(value, Mapping) or part not in value:
            return _MISSING
        value = value[part]
    return value


def _same_kind(a: Any, b: Any) -> bool:
    numbers = (int, float)
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool)
    return (isinstance(a, numbers) and isinstance(b, numbers)) or (isinstance(a, str) and isinstance(b, str))


def _leaf(op: str, have: Any, want: Any) -> bool:
    if op == "exists":
        return (have is not _MISSING) == bool(want)
    if have is _MISSING:
        return op in ("ne", "nin")
    if op == "eq":
        return _same_kind(have, want) and have == want
    if op == "ne":
        return not (_same_kind(have, want) and have == want)
    if op in ("in", "nin"):
        found = any(_same_kind(have, w) and have == w for w in want)
        return found if op == "in" else not found
    if op == "contains":
        if isinstance(have, str):
            return isinstance(want, str) and want in have
        if isinstance(have, list):
            return any(_same_kind(h, want) and h == want for h in have)
        return False
    if not _same_kind(have, want) or isinstance(have, bool):
        return False  # ordered comparison across kinds is never true
    return {"gt": have > want, "gte": have >= want, "lt": have < want, "lte": have <= want}[op]


def matches(tree: Tree | None, record: Mapping[str, Any]) -> bool:
    if tree is None:
        return True
    if "and" in tree:
        return all(matches(child, record) for child in tree["and"])
    if "or" in tree:
        return any(matches(child, record) for child in tree["or"])
    if "not" in tree:
        return not matches(tree["not"], record)
    return _leaf(tree["op"], _lookup(record, tree["field"]), tree.get("value"))
