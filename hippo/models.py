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


DocumentKind = Literal["document", "memory"]


class DocumentRecord(_Model):
    """A stored document or remembered memory: the unit of versions and of forgetting.

    ``version`` is the version of its live passages; older versions' passages
    stay stored, retired (their history). ``forgotten_at`` marks a tombstone.
    """

    id: str
    title: str = ""
    source: str | None = None
    space: str = DEFAULT_SPACE
    version: int = 1
    meta: dict[str, Any] = Field(default_factory=dict)
    kind: DocumentKind = "document"
    forgotten_at: datetime | None = None
    forgotten_reason: str | None = None


class Passage(_Model):
    id: str
    doc_id: str
    index: int = 0
    title: str = ""
    text: str
    space: str = DEFAULT_SPACE
    version: int = 1
    forgotten_at: datetime | None = None
    forgotten_reason: str | None = None
    """Why it left the live graph: ``superseded`` by a newer version, ``forgotten``, or the caller's reason."""
    created_at: datetime | None = None
    # Where the passage sits in its source: the document's source (a file path when read from
    # a file), the page it starts on (PDF pages, PPTX slides) and the headings above it.
    source: str | None = None
    page: int | None = None
    headings: list[str] = Field(default_factory=list)

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
    kind: Literal["fact", "entity", "query", "neighbour", "question", "span"] = "fact"
    grounded: bool | None = None
    """Every entity the clue names is a visible graph node (True), one is not (False), or unchecked (None)."""
    passage_ids: list[str] = Field(default_factory=list)
    """With clue expansion: the passages this clue retrieved, logged whether or not they reached the hits."""


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
    source: str | None = None
    page: int | None = None
    headings: list[str] = Field(default_factory=list)

    @property
    def location(self) -> str:
        """Where the hit's text sits, for people: ``docs/guide.pdf p.3 › Install › Linux``."""
        place = " ".join(x for x in (self.source or "", f"p.{self.page}" if self.page is not None else "") if x)
        return " › ".join(x for x in (place, *self.headings) if x)


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
    ids: list[str] = Field(default_factory=list, exclude=True)
    """The id each document given is stored under, in order (``hippo.spaces``); not serialized."""
    documents_updated: int = 0  # stored ids whose text changed: a new version
    passages_added: int = 0
    passages_unchanged: int = 0
    passages_retired: int = 0  # live passages of replaced versions
    entities_added: int = 0
    facts_added: int = 0
    mentions_added: int = 0
    synonyms_added: int = 0
    vectors_encoded: int = 0
    revision: int = 0
    timings: dict[str, float] = Field(default_factory=dict)
    usage: dict[str, Any] | None = None
    """LLM extraction only: calls and tokens per stage, cache hits, passages that fell back to spaCy."""


# --- small-text memory and the lifecycle (remember / forget / restore) ---------------


class NearDuplicate(_Model):
    """A live memory whose meaning is close to a new one: listed, never acted on."""

    uid: str
    label: str
    similarity: float


class RememberResult(_Model):
    uid: str
    custom_id: str | None = None
    action: Literal["inserted", "updated", "unchanged", "reused"]
    label: str
    version: int
    space: str
    embedded: bool
    searchable: dict[str, bool]  # {"bm25": ..., "vector": ...} when the call returned
    near_duplicates: list[NearDuplicate] = Field(default_factory=list)
    instructions: str | None = None  # the space's remember instructions, for the agent writing memories


class ForgottenFact(_Model):
    id: str
    text: str


class ForgottenEntity(_Model):
    id: str
    name: str


class ForgetResult(_Model):
    """What a forget touched (or, with ``dry_run``, would touch), and how to undo it."""

    uid: str
    kind: Literal["document", "memory", "passage"]
    dry_run: bool
    reason: str | None = None
    passages: list[str] = Field(default_factory=list)
    facts: list[ForgottenFact] = Field(default_factory=list)
    entities: list[ForgottenEntity] = Field(default_factory=list)  # those losing their last live passage
    edges: dict[str, int] = Field(default_factory=dict)  # edges leaving the walk, by kind
    undo: dict[str, str] = Field(default_factory=dict)


class RestoreResult(_Model):
    uid: str
    passages: list[str]
    entities: int = 0  # entities back in the live graph


class MemoryVersion(_Model):
    version: int
    text: str
    state: Literal["live", "superseded", "forgotten"]
    created_at: datetime | None = None
    retired_at: datetime | None = None


class MemoryItem(_Model):
    """A remembered memory as listed: its live text and what the caller gave with it."""

    uid: str
    custom_id: str | None = None
    label: str
    text: str
    space: str
    version: int
    created_at: datetime | None = None
    props: dict[str, Any] = Field(default_factory=dict)
    confidence: float | None = None
    salience: float | None = None
    agent_id: str | None = None


class TextForm(_Model):
    """A reader's view as text (``Memory.text_form``): its facts (those of live passages in its
    spaces), one line each, and the distinct entities those passages mention, by name."""

    tokens: int  # hippo.text.approx_tokens summed over the fact lines and the names
    entities: int
    facts: int


class Stats(_Model):
    documents: int
    passages: int
    entities: int
    facts: int
    mentions: int
    synonyms: int
    revision: int
    embedding_model: str | None
    embedding_backend: str | None = None
    store: str


# --- what a steered graph walk returns (the RCP ``graph`` method) ------------------


class GraphNode(_Model):
    """An entity or passage near the seeds, scored by the PPR mass flowing from them."""

    id: str
    kind: Literal["entity", "passage"]
    name: str = ""
    score: float = 0.0
    seed: bool = False


class GraphEdge(_Model):
    """Edges of one kind between two nodes, weights summed (``src < dst`` by vertex)."""

    src: str
    dst: str
    kind: Literal["relation", "mention", "synonym"]
    weight: float


class Neighborhood(_Model):
    seeds: list[str] = Field(default_factory=list)
    nodes: list[GraphNode] = Field(default_factory=list)
    edges: list[GraphEdge] = Field(default_factory=list)
