"""Read JSON out of what chat models actually send back.

Models wrap JSON in markdown fences, prefix it with ``<think>`` reasoning,
answer with a bare array instead of the object asked for, rename keys
(``named_entities`` / ``entities`` / ``ner``), write triples as lists or as
objects, and stop mid-array when they hit the token limit. Each of these is a
failure HippoRAG's users report (HippoRAG issue #194); each is handled here,
so one odd answer costs one passage at most, never a batch.

Pure functions, no I/O.
"""

from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Iterable, Sequence
from typing import Any


class ParseError(ValueError):
    """The answer holds nothing usable: no JSON value, or none of the keys expected."""


_REASONING = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.DOTALL | re.IGNORECASE)
_OPEN_REASONING = re.compile(r"<(think|thinking|reasoning)>", re.IGNORECASE)
_CLOSE_REASONING = re.compile(r"</(?:think|thinking|reasoning)>", re.IGNORECASE)
_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_-]*)[ \t]*\n?(.*?)(?:```|\Z)", re.DOTALL)


def strip_reasoning(text: str) -> str:
    """Drop ``<think>...</think>`` blocks. An unclosed one ran out of tokens: nothing after it is an
    answer. A lone closing tag (servers that strip the opening one) ends the reasoning."""
    text = _REASONING.sub("", text)
    closing = list(_CLOSE_REASONING.finditer(text))
    if closing:
        text = text[closing[-1].end():]
    opening = _OPEN_REASONING.search(text)
    if opening:
        text = text[: opening.start()]
    return text.strip()


def _candidates(text: str) -> list[str]:
    """Fenced blocks first (the model marked them as the answer), then the whole text."""
    blocks = [m.group(2).strip() for m in _FENCE.finditer(text) if m.group(2).strip()]
    return [*blocks, text] if blocks else [text]


def _safe_cuts(text: str, start: int) -> tuple[list[tuple[int, str]], str]:
    """Scan a JSON value from ``start``: places where it could be cut and closed (with the closing
    brackets each needs), and the closers for the whole text if it ended early."""
    stack: list[str] = []
    cuts: list[tuple[int, str]] = []
    in_string = escaped = False
    closers = {"{": "}", "[": "]"}
    for i in range(start, len(text)):
        ch = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
                cuts.append((i + 1, "".join(closers[b] for b in reversed(stack))))
            continue
        if ch == '"':
            in_string = True
        elif ch in "{[":
            stack.append(ch)
        elif ch in "}]":
            if not stack:
                break
            stack.pop()
            if not stack:
                return [], ""  # complete: nothing to repair
            cuts.append((i + 1, "".join(closers[b] for b in reversed(stack))))
        elif ch == ",":
            cuts.append((i, "".join(closers[b] for b in reversed(stack))))
    return cuts, "".join(closers[b] for b in reversed(stack))


def repair_truncated(text: str, start: int | None = None) -> Any:
    """Close a JSON value cut off mid-way, at the last point where it still parses.

    ``{"triples": [["a", "b", "c"], ["d", "e`` becomes ``{"triples": [["a", "b", "c"]]}``:
    what was complete is kept, the unfinished element is dropped.
    """
    if start is None:
        start = min((i for i in (text.find("{"), text.find("[")) if i >= 0), default=-1)
    if start < 0:
        raise ParseError("no JSON object or array in the answer")
    cuts, _ = _safe_cuts(text, start)
    for end, closing in reversed(cuts[-200:]):
        try:
            return json.loads(text[start:end] + closing)
        except json.JSONDecodeError:
            continue
    raise ParseError("truncated JSON could not be closed")


def _first_value(text: str) -> Any:
    """The value starting at the first bracket that opens one, whole or repaired. Outer brackets
    come first, so a truncated object is never mistaken for one of its inner lists."""
    decoder = json.JSONDecoder()
    for match in list(re.finditer(r"[{\[]", text))[:50]:
        try:
            return decoder.raw_decode(text, match.start())[0]
        except json.JSONDecodeError:
            pass
        try:
            return repair_truncated(text, match.start())
        except ParseError:
            continue
    raise ParseError("no JSON value")


def _python_literal(text: str) -> Any:
    """Single-quoted dicts (``{'triples': [...]}``): Python literals only, never code."""
    start = min((i for i in (text.find("{"), text.find("[")) if i >= 0), default=-1)
    if start < 0:
        raise ParseError("no literal")
    end = max(text.rfind("}"), text.rfind("]"))
    try:
        return ast.literal_eval(text[start : end + 1])
    except (ValueError, SyntaxError, MemoryError, RecursionError) as exc:
        raise ParseError("not a Python literal") from exc


def loads_lenient(text: str | None) -> Any:
    """The first JSON value in a model's answer, however it was wrapped or cut."""
    if not text or not text.strip():
        raise ParseError("empty answer")
    body = strip_reasoning(text)
    if not body:
        raise ParseError("the answer holds only reasoning (it ran out of tokens inside <think>)")
    for candidate in _candidates(body):
        try:
            return json.loads(candidate)
        except json.JSONDecodeError:
            pass
        for read in (_first_value, _python_literal):
            try:
                return read(candidate)
            except ParseError:
                continue
    raise ParseError(f"no JSON in the answer (starts {body[:60]!r})")


# -- shapes --------------------------------------------------------------------------------


def _key(name: str) -> str:
    return re.sub(r"[\s_-]+", "_", name.strip().casefold())


ENTITY_KEYS = ("named_entities", "entities", "ner", "named_entity", "entity", "entity_list",
               "namedentities", "extracted_entities")
TRIPLE_KEYS = ("triples", "extracted_triples", "triplets", "triple", "relations", "facts", "fact",
               "knowledge_graph", "graph", "rdf")
_SUBJECT = ("subject", "subj", "s", "head", "source", "entity1")
_PREDICATE = ("predicate", "pred", "p", "relation", "rel", "verb", "relationship")
_OBJECT = ("object", "obj", "o", "tail", "target", "entity2")


def find_list(data: Any, keys: Sequence[str]) -> list[Any] | None:
    """The list a model meant: the value of one of ``keys`` (in any case or spacing), a bare
    list, the only list in an object, or the same one level down (``{"result": {...}}``)."""
    if isinstance(data, list):
        return data
    if not isinstance(data, dict):
        return None
    by_key = {_key(str(k)): v for k, v in data.items()}
    for key in keys:
        value = by_key.get(_key(key))
        if isinstance(value, list):
            return value
    lists = [v for v in data.values() if isinstance(v, list)]
    if len(lists) == 1:
        return lists[0]
    for value in data.values():
        if isinstance(value, dict) and (found := find_list(value, keys)) is not None:
            return found
    return None


def text_of(value: Any) -> str | None:
    """A triple or entity element as text; None for missing values (as HippoRAG's files read)."""
    if value is None or isinstance(value, list | dict) or (isinstance(value, float) and math.isnan(value)):
        return None
    text = str(value).strip()
    return text or None


def _pick(item: dict[str, Any], names: Iterable[str]) -> Any:
    by_key = {_key(str(k)): v for k, v in item.items()}
    for name in names:
        if name in by_key:
            return by_key[name]
    return None


def parse_entities(text: str | None) -> list[str]:
    """Entity names from an NER answer, in order, each once."""
    items = find_list(loads_lenient(text), ENTITY_KEYS)
    if items is None:
        raise ParseError("no entity list in the answer")
    names: list[str] = []
    for item in items:
        if isinstance(item, dict):
            item = _pick(item, ("name", "entity", "text", "value"))
        if (name := text_of(item)) is not None:
            names.append(name)
    return list(dict.fromkeys(names))


def triple_of(item: Any) -> tuple[str, str, str] | None:
    """``[s, p, o]`` or ``{"subject", "predicate", "object"}`` (and their usual renamings)."""
    if isinstance(item, dict):
        parts = [_pick(item, names) for names in (_SUBJECT, _PREDICATE, _OBJECT)]
    elif isinstance(item, list | tuple) and len(item) == 3:
        parts = list(item)
    else:
        return None  # HippoRAG drops triples of other lengths too
    texts = [text_of(p) for p in parts]
    if any(t is None for t in texts):
        return None
    return texts[0], texts[1], texts[2]  # type: ignore[return-value]


def parse_triples(text: str | None) -> tuple[list[tuple[str, str, str]], int]:
    """Triples from an extraction answer, and how many malformed ones were dropped."""
    data = loads_lenient(text)
    if isinstance(data, list) and len(data) == 3 and all(isinstance(x, str) for x in data):
        data = [data]  # one bare triple
    items = find_list(data, TRIPLE_KEYS)
    if items is None:
        raise ParseError("no triple list in the answer")
    triples = [t for item in items if (t := triple_of(item)) is not None]
    return triples, len(items) - len(triples)


def parse_lines(text: str | None) -> list[str]:
    """Plain-text lines, for answers that ignore the JSON instruction (MemoRAG's line format)."""
    lines = []
    for raw in strip_reasoning(text or "").splitlines():
        line = re.sub(r"^\s*(?:[-*•]|\d+[.)]|[a-z][.)])\s*", "", raw).strip().strip('"').strip()
        if line and not line.startswith(("```", "{", "}", "[", "]")):
            lines.append(line)
    return lines
