"""MemoRAG's clue step: the LLM reads what recall found and writes searches.

It gets the question, the recalled entities and the kept facts, and answers
with sub-questions and text spans likely to appear in the corpus. What it
writes is only a proposal: ``hippo.memory.clues`` checks every clue (grounded
in the graph, finds a passage above a similarity floor) before it is used.
"""

from __future__ import annotations

from typing import Any

from hippo.llm.client import LLMClient
from hippo.llm.jsonparse import ParseError, loads_lenient, parse_lines, text_of
from hippo.llm.prompts import CLUES_SCHEMA, clue_messages
from hippo.llm.usage import Usage

_QUESTION_KEYS = ("questions", "sub_questions", "subquestions", "surrogate_queries", "surrogate_questions",
                  "queries")
_SPAN_KEYS = ("spans", "text_spans", "evidence", "passages", "clues", "snippets")


def _listed(data: dict[str, Any], keys: tuple[str, ...]) -> list[str]:
    by_key = {str(k).strip().casefold().replace(" ", "_").replace("-", "_"): v for k, v in data.items()}
    for key in keys:
        value = by_key.get(key)
        if isinstance(value, list):
            return [t for item in value if (t := text_of(item))]
    return []


def parse_clues(answer: str) -> list[tuple[str, str]]:
    """(text, kind) pairs, kind ``question`` or ``span``. JSON when there is any; otherwise the
    answer's lines, as MemoRAG reads them."""
    try:
        data = loads_lenient(answer)
    except ParseError:
        data = None
    if isinstance(data, dict):
        pairs = [(t, "question") for t in _listed(data, _QUESTION_KEYS)]
        pairs += [(t, "span") for t in _listed(data, _SPAN_KEYS)]
        if pairs:
            return pairs
    if isinstance(data, list):
        return [(t, "question" if t.endswith("?") else "span") for item in data if (t := text_of(item))]
    return [(line, "question" if line.endswith("?") else "span") for line in parse_lines(answer)]


class LLMClueWriter:
    """A ``ClueWriter`` for ``hippo.memory.clues``: one LLM call per expanded recall."""

    def __init__(self, client: LLMClient, *, max_tokens: int = 512) -> None:
        self.client = client
        self.max_tokens = max_tokens
        self.usage = Usage()

    def __call__(self, query: str, entities: list[str], facts: list[str], n: int) -> list[tuple[str, str]]:
        completion = self.client.complete("clues", clue_messages(query, entities, facts, n), schema=CLUES_SCHEMA,
                                          usage=self.usage, max_tokens=self.max_tokens)
        return parse_clues(completion.text)
