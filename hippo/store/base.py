"""The store protocol: the one seam between the engine and a database.

Nothing above ``hippo.store`` knows which database it talks to. Every method
is batched and id-based; every write is one transaction.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, Protocol, runtime_checkable

import numpy as np

from hippo.ids import text_hash
from hippo.models import DocumentRecord, Entity, Fact, Mention, Passage, Synonym

VectorKind = Literal["passage", "entity", "fact"]
Spaces = frozenset[str] | None
"""The spaces a caller may read; ``None`` means every space."""


def embed_text(record: Passage | Entity | Fact) -> str:
    """The text whose vector stands for a record."""
    if isinstance(record, Passage):
        return record.embed_text
    if isinstance(record, Entity):
        return record.key
    return record.text


def embed_hash(record: Passage | Entity | Fact) -> str:
    return text_hash(embed_text(record))


@dataclass
class WriteBatch:
    """Everything one index call writes, applied in a single transaction.

    ``vectors`` maps the text hash of a record's embed text to its vector;
    records whose vector the store already holds need no entry.
    """

    documents: list[DocumentRecord] = field(default_factory=list)
    passages: list[Passage] = field(default_factory=list)
    entities: list[Entity] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)
    mentions: list[Mention] = field(default_factory=list)
    synonyms: list[Synonym] = field(default_factory=list)
    vectors: dict[str, np.ndarray] = field(default_factory=dict)
    # Lifecycle, in the same transaction as the rest: passages leaving the live graph
    # (tombstoned with ``retire_reason`` at ``retire_at``, never deleted) and coming back.
    retire: list[str] = field(default_factory=list)
    retire_reason: str = "forgotten"
    retire_at: datetime | None = None
    revive: list[str] = field(default_factory=list)
    # Optimistic concurrency: document id -> the version the caller read (0: absent).
    # Another writer's version in between makes the write raise ``Conflict``.
    expect_versions: dict[str, int] = field(default_factory=dict)

    def is_empty(self) -> bool:
        return not (
            self.documents or self.passages or self.entities or self.facts
            or self.mentions or self.synonyms or self.vectors or self.retire or self.revive
        )


@dataclass
class GraphData:
    """The live graph as flat rows, for building the in-process projection."""

    passages: list[tuple[str, str]]  # (passage id, space)
    entities: list[str]
    facts: list[tuple[str, str, str, str]]  # (fact id, subject id, object id, passage id)
    mentions: list[tuple[str, str]]  # (passage id, entity id)
    synonyms: list[tuple[str, str, float]]
    texts: dict[str, str] = field(default_factory=dict)  # live passage id -> embed text (keyword index)


@runtime_checkable
class Store(Protocol):
    """What the engine needs from a database. Implemented by SQLite and Neo4j."""

    url: str

    def revision(self) -> int:
        """A counter bumped by every write that changed something."""

    def embedding_model(self) -> tuple[str, int] | None:
        """(model name, dimension) of the vectors stored, or None when there are none yet."""

    def bind_embedding_model(self, name: str, dim: int) -> None:
        """Record the model on first use; raise ``EmbeddingModelMismatch`` for another one."""

    def write(self, batch: WriteBatch) -> int:
        """Upsert the batch atomically; return the revision after it."""

    def existing_ids(self, ids: Iterable[str]) -> set[str]:
        """Which of these passage, entity or fact ids are stored."""

    def vectors(self, hashes: Iterable[str]) -> dict[str, np.ndarray]:
        """Stored vectors by text hash (the embedding cache)."""

    def load_graph(self) -> GraphData: ...

    def load_vectors(self, kind: VectorKind) -> tuple[list[str], list[str], np.ndarray]:
        """(record ids, their text hashes, float32 matrix) of live records of a kind."""

    def passages(self, ids: Iterable[str]) -> list[Passage]: ...

    def entities(self, ids: Iterable[str]) -> list[Entity]: ...

    def facts(self, ids: Iterable[str]) -> list[Fact]: ...

    def keyword_search(self, query: str, k: int, spaces: Spaces = None) -> list[tuple[str, float]]:
        """BM25-ranked (passage id, score), best first; an empty list for no match."""

    def documents(self, ids: Iterable[str]) -> list[DocumentRecord]:
        """Stored documents by id, forgotten ones included, in the order asked."""

    def document_passages(self, doc_ids: Iterable[str]) -> list[Passage]:
        """Every passage of these documents, all versions and tombstones included."""

    def find_documents(self, *, spaces: Spaces = None, kind: str | None = None, live: bool = True,
                       limit: int = 1000) -> list[DocumentRecord]:
        """Documents in ``spaces`` (all if None), newest first; ``live`` leaves out forgotten ones."""

    def get_values(self, namespace: str, keys: Iterable[str]) -> dict[str, str]:
        """The small key-value area (settings, registries, caches): stored values by key."""

    def put_values(self, namespace: str, items: Mapping[str, str | None]) -> None:
        """Set values atomically; ``None`` deletes. Does not move the revision."""

    def list_values(self, namespace: str, limit: int = 1000) -> dict[str, str]:
        """Up to ``limit`` entries of a namespace, in key order (API keys, for listing them)."""

    def counts(self) -> dict[str, int]: ...

    def close(self) -> None: ...
