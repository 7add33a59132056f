"""Metadata filters (spec section 8): validated by the SDK, evaluated here against a hit's record.

A hit's record is its document's fields (``docId``, ``title``, ``source``,
``space``, ``kind``) plus the document's own metadata under ``meta.<key>``
(``meta.year``, ``meta.lang.code`` for nested objects).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rcp import filter as rcp_filter

from hippo.limits import check_depth
from hippo.server.errors import invalid

FIELDS = {"docId": "keyword", "title": "keyword", "source": "keyword", "space": "keyword", "kind": "keyword"}
META_PREFIX = "meta."
OPERATORS = sorted(rcp_filter.ALL_OPS)
MAX_DEPTH = 16  # and/or/not levels
MAX_NODES = 1_000  # combinators and leaves in one filter
MAX_VALUES = 1_000  # values in one in/nin list
_MISSING = object()

Tree = dict[str, Any]


class Members:
    """An ``in``/``nin`` list as sets by kind: one lookup per candidate, not a scan of the list.
    Booleans, numbers and strings never match each other (``_same_kind``)."""

    def __init__(self, values: list[Any]) -> None:
        self.flags = {v for v in values if isinstance(v, bool)}
        self.numbers = {v for v in values if isinstance(v, int | float) and not isinstance(v, bool)}
        self.strings = {v for v in values if isinstance(v, str)}

    def __contains__(self, value: Any) -> bool:
        if isinstance(value, bool):
            return value in self.flags
        if isinstance(value, int | float):
            return value in self.numbers
        return isinstance(value, str) and value in self.strings


def validate(node: Any) -> Tree | None:
    """The normalized tree (``in``/``nin`` lists as ``Members``), or -32602 naming the offending path."""
    if node is not None:
        check_depth("filter", node)
    tree = rcp_filter.validate(node, fields=None, operators=OPERATORS, max_depth=MAX_DEPTH)
    if tree is None:
        return None
    nodes = [0]
    return _check(tree, "filter", nodes)


def _check(node: Tree, path: str, nodes: list[int]) -> Tree:
    # What the SDK's validator lets through: empty and/or arrays (spec 8 says -32602), fields we
    # do not have, and sizes that would make every candidate cost more than the search.
    nodes[0] += 1
    if nodes[0] > MAX_NODES:
        raise invalid("filter", f"has more than {MAX_NODES} nodes; the limit is {MAX_NODES}", limit=MAX_NODES)
    for combinator in ("and", "or"):
        if combinator in node:
            if not node[combinator]:
                raise invalid(f"{path}.{combinator}", "is an empty array")
            return {combinator: [_check(child, f"{path}.{combinator}[{i}]", nodes)
                                 for i, child in enumerate(node[combinator])]}
    if "not" in node:
        return {"not": _check(node["not"], f"{path}.not", nodes)}
    field = node["field"]
    if field not in FIELDS and not (field.startswith(META_PREFIX) and len(field) > len(META_PREFIX)):
        raise invalid(f"{path}.field", f"unknown field {field!r}; filterable: {', '.join(FIELDS)} "
                                       f"and {META_PREFIX}<key> for document metadata")
    if node["op"] in ("in", "nin"):
        if len(node["value"]) > MAX_VALUES:
            raise invalid(f"{path}.value", f"has {len(node['value'])} values; the limit is {MAX_VALUES}",
                          limit=MAX_VALUES)
        return {**node, "value": Members(node["value"])}
    return node


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
        found = have in want
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
