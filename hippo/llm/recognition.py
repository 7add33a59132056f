"""HippoRAG 2's recognition memory: the LLM keeps the retrieved facts that bear on the query.

Unlike HippoRAG, which snaps whatever fact the model writes to the closest
candidate (so an invented fact always becomes *some* real one), the model
answers with candidate numbers here; a fact written out as text counts only
when it matches a candidate almost exactly. Anything else is ignored.
"""

from __future__ import annotations

import difflib
from typing import Any

from hippo.llm.client import LLMClient
from hippo.llm.jsonparse import ParseError, find_list, loads_lenient, text_of, triple_of
from hippo.llm.prompts import FILTER_SCHEMA, filter_messages
from hippo.llm.usage import Usage
from hippo.text import normalize

_KEEP_KEYS = ("keep", "kept", "facts", "fact", "relevant", "relevant_facts", "indices", "selected", "ids")
_TEXT_MATCH = 0.9


def _index_of(item: Any, facts: list[str], keys: list[str]) -> int | None:
    if isinstance(item, bool):
        return None
    if isinstance(item, int | float) or (isinstance(item, str) and item.strip().isdigit()):
        number = int(float(item))
        return number - 1 if 1 <= number <= len(facts) else None
    if isinstance(item, list | tuple | dict):
        triple = triple_of(item)
        item = " ".join(triple) if triple else None
    text = text_of(item)
    if text is None:
        return None
    key = normalize(text)
    if key in keys:
        return keys.index(key)
    close = difflib.get_close_matches(key, keys, n=1, cutoff=_TEXT_MATCH)
    return keys.index(close[0]) if close else None


def parse_kept(answer: str, facts: list[str], keep: int) -> list[int]:
    """Indices (0-based) of the facts the answer keeps, in its order, each once, at most ``keep``."""
    items = find_list(loads_lenient(answer), _KEEP_KEYS)
    if items is None:
        raise ParseError("no list of kept facts in the answer")
    keys = [normalize(f) for f in facts]
    chosen: list[int] = []
    for item in items:
        index = _index_of(item, facts, keys)
        if index is not None and index not in chosen:
            chosen.append(index)
    return chosen[:keep]


class RecognitionFilter:
    """A ``FactFilter`` for ``Recaller``: one LLM call per recall that retrieved facts."""

    def __init__(self, client: LLMClient, *, keep: int = 4, max_tokens: int = 256) -> None:
        self.client = client
        self.keep = keep
        self.max_tokens = max_tokens
        self.usage = Usage()

    def __call__(self, query: str, facts: list[str]) -> list[int]:
        if not facts:
            return []
        completion = self.client.complete("filter", filter_messages(query, facts, self.keep), schema=FILTER_SCHEMA,
                                          usage=self.usage, max_tokens=self.max_tokens)
        return parse_kept(completion.text, facts, self.keep)
