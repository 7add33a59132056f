"""The store protocol: the one seam between the engine and a database.

Nothing above ``hippo.store`` knows which database it talks to. Every method
is batched and id-based; every write is one transaction.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, Protocol, runtime_checkable

import numpy as np

from hippo.errors import EmbeddingBackendMismatch, EmbeddingModelMismatch
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


DERIVED_NAMESPACE = "hippo-derived"
"""The key-value namespace of the store's id, which ties a saved derived state to its store
(``hippo.memory.home``): a copy of the store made record by record (a bulk import) is another store
and does not take it."""

LEGACY_BACKEND = "torch"
"""The backend of a store bound before backends were recorded: every hippo until then encoded with torch."""

INT8_RECIPE = "onnx-int8/ffn-fp32"
"""What the ``onnx-int8`` setting encodes with: int8 with the feed-forward down-projections in fp32.
Stores bound to plain ``onnx-int8`` hold vectors of the earlier all-int8 recipe (cosine 0.995 to
fp32, against 0.998 for these), so they are told to re-embed rather than mixed."""

_VECTOR_FAMILY = {"torch": "fp32", "onnx": "fp32", "onnx-int8": "int8", INT8_RECIPE: "int8/ffn-fp32"}
"""Backends whose vectors are interchangeable: ONNX fp32 gives torch's vectors to float rounding
(cosine >= 0.99999, tested); int8 does not (cosine ~0.998), so it is never mixed with them."""


def vector_family(backend: str) -> str:
    return _VECTOR_FAMILY.get(backend, backend)


def backend_setting(backend: str) -> str:
    """The ``embedding_backend`` setting whose encoder makes vectors of ``backend``."""
    return backend.split("/", 1)[0]


@dataclass(frozen=True)
class EmbeddingIdentity:
    """What made a store's vectors: vectors of two identities are never mixed or compared."""

    model: str
    dim: int
    backend: str = LEGACY_BACKEND

    def key(self) -> str:
        return f"{self.model}\x00{self.dim}\x00{self.backend}"

    def describe(self) -> str:
        return f"{self.model!r} ({self.dim} dims, {self.backend} backend)"

    def compatible(self, other: EmbeddingIdentity) -> bool:
        """Vectors of ``other`` may be compared with these: same model and dimension, same vector family."""
        return (self.model, self.dim, vector_family(self.backend)) == \
            (other.model, other.dim, vector_family(other.backend))


class BoundIdentity:
    """``embedding_model`` and ``embedding_backend`` of the protocol, from a store's ``_bound()``."""

    def _bound(self) -> EmbeddingIdentity | None:
        raise NotImplementedError

    def last_write(self) -> tuple[int, str | None]:
        """The revision and the ``WriteBatch.write_id`` of the write that made it, read together (None:
        that write carried none). Another write that moves the revision may leave the last id in place:
        ids are never reused, so an id only matches the write that carried it."""

    def embedding_model(self) -> tuple[str, int] | None:
        bound = self._bound()
        return (bound.model, bound.dim) if bound else None

    def embedding_backend(self) -> str | None:
        bound = self._bound()
        return bound.backend if bound else None


def binding_error(url: str, bound: EmbeddingIdentity, wanted: EmbeddingIdentity) -> EmbeddingModelMismatch:
    """The error for opening a store bound to ``bound`` with an encoder of ``wanted``."""
    command = f"hippo reembed --store {url}"
    if (bound.model, bound.dim) == (wanted.model, wanted.dim):
        if backend_setting(bound.backend) == backend_setting(wanted.backend):
            return EmbeddingBackendMismatch(
                f"store {url} holds vectors of {bound.model!r} made by an earlier recipe of the "
                f"{backend_setting(bound.backend)} backend ({bound.backend}); this hippo encodes with "
                f"{wanted.backend}, whose vectors differ slightly. Re-embed the store with `{command}`."
            )
        return EmbeddingBackendMismatch(
            f"store {url} holds vectors of {bound.model!r} made by the {bound.backend} backend; this process "
            f"encodes with {wanted.backend}, whose vectors differ slightly. Re-embed the store with "
            f"`{command}` (HIPPO_EMBEDDING_BACKEND={backend_setting(wanted.backend)}), or open it with "
            f"HIPPO_EMBEDDING_BACKEND={backend_setting(bound.backend)}."
        )
    return EmbeddingModelMismatch(
        f"store {url} holds vectors of {bound.model!r} ({bound.dim} dims); cannot add vectors of "
        f"{wanted.model!r} ({wanted.dim} dims). Open it with embedding_model={bound.model!r}, re-embed it "
        f"with `{command}` (HIPPO_EMBEDDING_MODEL={wanted.model}), or use another store."
    )


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
    # Kept by the store with the revision this write makes (``Store.last_write``): the engine journals a
    # write before committing it, and a reopen replays that record only if the store holds its id.
    write_id: str | None = None

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
    titles: dict[str, str] = field(default_factory=dict)  # live passage id -> title, where it has one


@runtime_checkable
class Store(Protocol):
    """What the engine needs from a database. Implemented by SQLite and Neo4j."""

    url: str

    def revision(self) -> int:
        """A counter bumped by every write that changed something."""

    def embedding_model(self) -> tuple[str, int] | None:
        """(model name, dimension) of the vectors stored, or None when there are none yet."""

    def embedding_backend(self) -> str | None:
        """The backend that made the stored vectors (``torch`` for stores bound before it was
        recorded), or None when no model is bound yet."""

    def bind_embedding_model(self, name: str, dim: int, backend: str = LEGACY_BACKEND) -> None:
        """Record the model and backend on first use; raise ``EmbeddingModelMismatch`` for another
        model, ``EmbeddingBackendMismatch`` for the same model made by a backend whose vectors differ
        (``EmbeddingIdentity.compatible``)."""

    def write(self, batch: WriteBatch) -> int:
        """Upsert the batch atomically; return the revision after it."""

    def existing_ids(self, ids: Iterable[str]) -> set[str]:
        """Which of these passage, entity or fact ids are stored."""

    def vectors(self, hashes: Iterable[str]) -> dict[str, np.ndarray]:
        """Stored vectors by text hash (the embedding cache)."""

    def as_kept(self, vectors: np.ndarray) -> np.ndarray:
        """These float32 vectors as ``vectors`` will give them back (a SQLite store keeps float16), so
        the process that encoded them holds the numbers every later reader of the store will."""

    def load_graph(self) -> GraphData: ...

    # Re-embedding (``hippo.memory.reembed``): new vectors are staged beside the live ones, which
    # readers keep using, then swapped in by one transaction.

    def embed_texts(self) -> dict[str, str]:
        """The embed text of every stored record by text hash: passages of every version and
        tombstone, entities, facts."""

    def staged_hashes(self, identity: EmbeddingIdentity) -> set[str]:
        """Hashes already staged for ``identity`` (an interrupted re-embedding resumes from them)."""

    def stage_vectors(self, identity: EmbeddingIdentity, vectors: Mapping[str, np.ndarray]) -> None:
        """Keep vectors for the swap; vectors staged for another identity are dropped first."""

    def swap_staged_vectors(self, identity: EmbeddingIdentity) -> int:
        """In one transaction: replace every stored vector by the staged ones and bind ``identity``;
        returns the revision after it. Raises ``Conflict`` (changing nothing) when a stored
        record's text has no staged vector, e.g. one written since ``embed_texts``."""

    def load_vectors(self, kind: VectorKind) -> tuple[list[str], list[str], np.ndarray]:
        """(record ids, their text hashes, float32 matrix) of live records of a kind."""

    def vector_batches(self, kind: VectorKind) -> Iterator[tuple[list[str], list[str], np.ndarray]]:
        """``load_vectors`` in parts read in one snapshot, so a reader holds one part at a time, not a
        whole kind (10M facts are 15 GB as float32)."""

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
