"""hippo: HippoRAG graph memory. A knowledge graph of your corpus, recalled as
clues and draft hits by Personalized PageRank."""

from hippo.config import Settings
from hippo.errors import EmbeddingModelError, EmbeddingModelMismatch, HippoError, InvalidInput, NotFound, StoreError
from hippo.memory import Memory
from hippo.models import (
    Clue,
    Document,
    Entity,
    Fact,
    Hit,
    IndexResult,
    Passage,
    Provenance,
    RecallResult,
    Seed,
    Stats,
)

__all__ = [
    "Clue", "Document", "EmbeddingModelError", "EmbeddingModelMismatch", "Entity", "Fact", "HippoError", "Hit",
    "IndexResult", "InvalidInput", "Memory", "NotFound", "Passage", "Provenance", "RecallResult", "Seed",
    "Settings", "Stats", "StoreError",
]
__version__ = "0.1.0"
