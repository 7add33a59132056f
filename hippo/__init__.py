"""hippo: HippoRAG graph memory. A knowledge graph of your corpus, recalled as
clues and draft hits by Personalized PageRank."""

from hippo.config import Settings
from hippo.errors import (
    AccessDenied,
    AlreadyForgotten,
    Conflict,
    EmbeddingModelError,
    EmbeddingModelMismatch,
    HippoError,
    InvalidInput,
    NotFound,
    NotForgotten,
    StoreError,
)
from hippo.memory import Memory
from hippo.models import (
    Clue,
    Document,
    Entity,
    Fact,
    ForgetResult,
    Hit,
    IndexResult,
    MemoryItem,
    MemoryVersion,
    Passage,
    Provenance,
    RecallResult,
    RememberResult,
    RestoreResult,
    Seed,
    Stats,
)

from hippo.version import __version__  # noqa: F401  (hippo.__version__)

__all__ = [
    "AccessDenied", "AlreadyForgotten", "Clue", "Conflict", "Document", "EmbeddingModelError",
    "EmbeddingModelMismatch", "Entity", "Fact", "ForgetResult", "HippoError", "Hit", "IndexResult", "InvalidInput",
    "Memory", "MemoryItem", "MemoryVersion", "NotForgotten", "NotFound", "Passage", "Provenance", "RecallResult",
    "RememberResult", "RestoreResult", "Seed", "Settings", "Stats", "StoreError",
]
