"""The records hippo stores and the results it returns (pydantic v2).

Python code uses snake_case attributes; ``model_dump(by_alias=True)`` gives
the camelCase the Retrieval Context Protocol speaks (``seedIds``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

DEFAULT_SPACE = "org"


class _Model(BaseModel):
    model_config = ConfigDict(populate_by_name=True, alias_generator=to_camel, frozen=False)


# --- what the caller gives ----------------------------------------------------


class Document(_Model):
    """A source the caller gives. Without ``id``, the id is derived from title and text."""

    id: str | None = None
    title: str = ""
    text: str
    source: str | None = None
    space: str = DEFAULT_SPACE
    meta: dict[str, Any] = Field(default_factory=dict)


# --- what the store keeps -----------------------------------------------------


class DocumentRecord(_Model):
    id: str
    title: str = ""
    source: str | None = None
    space: str = DEFAULT_SPACE
    version: int = 1
    meta: dict[str, Any] = Field(default_factory=dict)


class Passage(_Model):
    id: str
    doc_id: str
    index: int = 0
    title: str = ""
    text: str
    space: str = DEFAULT_SPACE
    version: int = 1
    forgotten_at: datetime | None = None

    @property
    def embed_text(self) -> str:
        """What the embedder reads: the title carries the passage's subject."""
        return f"{self.title}\n{self.text}" if self.title else self.text


class Entity(_Model):
    id: str
    name: str
    key: str
    type: str = "concept"


class Fact(_Model):
    """A (subject, predicate, object) triple read from one passage."""

    id: str
    subject_id: str
    predicate: str
    object_id: str
    passage_id: str
    subject: str
    object: str

    @property
    def text(self) -> str:
        return f"{self.subject} {self.predicate} {self.object}"


class Mention(_Model):
    passage_id: str
    entity_id: str


class Synonym(_Model):
    """Two entities whose embeddings are close; ``a < b`` so a pair is stored once."""

    a: str
    b: str
    score: float


# --- what recall returns ------------------------------------------------------


Strategy = Literal["graph", "entity_link", "dense", "empty"]
"""How a recall found its hits.

- ``graph``: PPR from seeds that include entities of retrieved facts;
- ``entity_link``: PPR from query entities linked to graph nodes, no fact seed;
- ``dense``: no seed at all, plain dense retrieval with the query;
- ``empty``: the memory holds no passage.
"""


class Seed(_Model):
    id: str
    name: str
    weight: float
    source: Literal["fact", "query_entity"]


class Clue(_Model):
    """A pointer into memory: a surrogate query, graph seed ids, or both."""

    query: str | None = None
    seed_ids: list[str] = Field(default_factory=list)
    weight: float | None = None
    kind: Literal["fact", "entity", "query"] = "fact"


class Provenance(_Model):
    """Why a hit was recalled: the seeds it mentions and the facts it holds."""

    nodes: list[str] = Field(default_factory=list)
    facts: list[str] = Field(default_factory=list)


class Hit(_Model):
    id: str
    text: str
    score: float
    title: str = ""
    doc_id: str | None = None
    space: str = DEFAULT_SPACE
    scores: dict[str, float] = Field(default_factory=dict)
    provenance: Provenance = Field(default_factory=Provenance)


class RecallResult(_Model):
    query: str
    strategy: Strategy
    clues: list[Clue]
    hits: list[Hit]
    seeds: list[Seed] = Field(default_factory=list)
    note: str | None = None
    timings: dict[str, float] = Field(default_factory=dict)


class IndexResult(_Model):
    documents: int = 0
    passages_added: int = 0
    passages_unchanged: int = 0
    entities_added: int = 0
    facts_added: int = 0
    mentions_added: int = 0
    synonyms_added: int = 0
    vectors_encoded: int = 0
    revision: int = 0
    timings: dict[str, float] = Field(default_factory=dict)


class Stats(_Model):
    documents: int
    passages: int
    entities: int
    facts: int
    mentions: int
    synonyms: int
    revision: int
    embedding_model: str | None
    store: str
