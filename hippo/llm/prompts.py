"""The prompts hippo sends, written for this project, and the JSON shapes it asks for.

``PROMPT_VERSION`` is part of every cache key: change a prompt's wording or
its example and bump it, so no answer to an old prompt is read as an answer
to the new one.

What each prompt must achieve (HippoRAG's two-step OpenIE, its recognition
filter, MemoRAG's clue step) is described in ``../shared/notes/hipporag.md``
§2.2 and §3; the wording and the one-shot examples here are our own.
"""

from __future__ import annotations

import json
from typing import Any

PROMPT_VERSION = "hippo-2025-1"

Messages = list[dict[str, str]]
Schema = tuple[str, dict[str, Any]]
"""(name, JSON schema) for ``response_format={"type": "json_schema", ...}``."""


def _strings(at_most: int | None = None) -> dict[str, Any]:
    return {"type": "array", "items": {"type": "string"}, **({"maxItems": at_most} if at_most else {})}


# Bounds on list lengths. Under a decoding grammar (llama.cpp) a small model that wants to write a key
# the schema forbids is held inside the list instead and repeats its last item until max_tokens (Gemma
# 3 270M: 512 tokens of one triple, 110 s); the bound makes the grammar close the list. Strict
# json_schema drops them (hippo.llm.client): capable models are not cut short.
MAX_NAMES = 32
MAX_TRIPLES = 32


def _object(**properties: Any) -> dict[str, Any]:
    # Strict structured output wants every property required and nothing else allowed.
    return {"type": "object", "properties": properties, "required": list(properties),
            "additionalProperties": False}


# -- OpenIE step 1: named entities -----------------------------------------------------------

_EXAMPLE_PASSAGE = (
    "Lake Tekapo\n"
    "Lake Tekapo is the second-largest of three roughly parallel lakes along the northern edge of the "
    "Mackenzie Basin on New Zealand's South Island. The Church of the Good Shepherd was built on its "
    "shore in 1935 and is one of the most photographed buildings in the country."
)
_EXAMPLE_ENTITIES = ["Lake Tekapo", "Mackenzie Basin", "New Zealand", "South Island",
                     "Church of the Good Shepherd", "1935"]
_EXAMPLE_TRIPLES = [
    ["Lake Tekapo", "is second-largest of", "three parallel lakes"],
    ["Lake Tekapo", "lies along northern edge of", "Mackenzie Basin"],
    ["Mackenzie Basin", "is on", "South Island"],
    ["South Island", "is part of", "New Zealand"],
    ["Church of the Good Shepherd", "was built on shore of", "Lake Tekapo"],
    ["Church of the Good Shepherd", "was built in", "1935"],
    ["Church of the Good Shepherd", "is one of most photographed buildings in", "New Zealand"],
]

NER_SYSTEM = (
    "You read one passage and list the named entities in it: people, organisations, places, works, "
    "events, products, dates and other specific things the passage names. Copy each name exactly as "
    "the passage writes it and list it once. Leave out pronouns and generic nouns. "
    'Reply with JSON only, in the form {"named_entities": ["...", "..."]}.'
)
NER_SCHEMA: Schema = ("named_entities", _object(named_entities=_strings(MAX_NAMES)))


def ner_messages(passage: str) -> Messages:
    return [
        {"role": "system", "content": NER_SYSTEM},
        {"role": "user", "content": f"Passage:\n{_EXAMPLE_PASSAGE}"},
        {"role": "assistant", "content": json.dumps({"named_entities": _EXAMPLE_ENTITIES})},
        {"role": "user", "content": f"Passage:\n{passage}"},
    ]


# -- OpenIE step 2: triples conditioned on the entities ----------------------------------------

TRIPLES_SYSTEM = (
    "You turn a passage into a knowledge graph: a list of [subject, predicate, object] triples, each "
    "stating one fact the passage asserts. You are given the passage's named entities; every triple "
    "should contain at least one of them, preferably two, as subject or object. Replace pronouns and "
    "phrases like 'the company' with the name they refer to. Keep predicates short verb phrases and "
    "keep subjects and objects as short as the names allow. State nothing the passage does not say. "
    'Reply with JSON only, in the form {"triples": [["subject", "predicate", "object"], ...]}.'
)
# Three strings per triple: the strict json_schema level drops the bounds (hippo.llm.client), a
# decoding grammar (llama.cpp) enforces them.
_TRIPLE = {"type": "array", "items": {"type": "string"}, "minItems": 3, "maxItems": 3}
TRIPLES_SCHEMA: Schema = ("triples", _object(triples={"type": "array", "items": _TRIPLE,
                                                       "maxItems": MAX_TRIPLES}))


def _triples_user(passage: str, entities: list[str]) -> str:
    return f"Passage:\n{passage}\n\nNamed entities: {json.dumps({'named_entities': entities}, ensure_ascii=False)}"


def triples_messages(passage: str, entities: list[str]) -> Messages:
    return [
        {"role": "system", "content": TRIPLES_SYSTEM},
        {"role": "user", "content": _triples_user(_EXAMPLE_PASSAGE, _EXAMPLE_ENTITIES)},
        {"role": "assistant", "content": json.dumps({"triples": _EXAMPLE_TRIPLES})},
        {"role": "user", "content": _triples_user(passage, entities)},
    ]


# -- recognition filter (HippoRAG 2) -----------------------------------------------------------

FILTER_SYSTEM = (
    "You are the recognition step of a memory. You get a question and numbered facts that were "
    "retrieved for it. Keep the facts that help answer the question: facts that state part of the "
    "answer and facts about an entity the question leads through. Keep at most {keep}, most useful "
    "first. Never write a fact of your own. If no fact helps, keep none. "
    'Reply with JSON only, in the form {{"keep": [numbers]}}, e.g. {{"keep": [2, 1]}} or {{"keep": []}}.'
)
FILTER_SCHEMA: Schema = ("recognition", _object(keep={"type": "array", "items": {"type": "integer"}}))


def filter_messages(query: str, facts: list[str], keep: int) -> Messages:
    numbered = "\n".join(f"{i}. {fact}" for i, fact in enumerate(facts, start=1))
    return [
        {"role": "system", "content": FILTER_SYSTEM.format(keep=keep)},
        {"role": "user", "content": f"Question: {query}\n\nFacts:\n{numbered}"},
    ]


# -- clue writing (MemoRAG) --------------------------------------------------------------------

CLUES_SYSTEM = (
    "You help a search engine find evidence in a corpus. You get a question and what memory recalled "
    "for it from the corpus' knowledge graph: entities and facts. Write search clues of two kinds: "
    "sub-questions, each asking for one piece the answer depends on, and text spans likely to appear "
    "word for word in a passage that holds the answer. Use only names that appear in the question or "
    "in the recalled memory; never guess a name or an answer you do not see. Each clue at least four "
    "words; at most {n} clues in all. "
    'Reply with JSON only, in the form {{"questions": ["..."], "spans": ["..."]}}.'
)
CLUES_SCHEMA: Schema = ("clues", _object(questions=_strings(), spans=_strings()))


def clue_messages(query: str, entities: list[str], facts: list[str], n: int) -> Messages:
    memory = "Entities: " + ("; ".join(entities) if entities else "(none)")
    memory += "\nFacts:\n" + ("\n".join(f"- {f}" for f in facts) if facts else "(none)")
    return [
        {"role": "system", "content": CLUES_SYSTEM.format(n=n)},
        {"role": "user", "content": f"Question: {query}\n\nRecalled memory:\n{memory}"},
    ]
