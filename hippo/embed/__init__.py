"""Text -> unit vectors. sentence-transformers by default; anything with ``encode``."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from hippo.embed.sentence import SentenceEmbedder, resolve_model

__all__ = ["Embedder", "SentenceEmbedder", "resolve_model"]


@runtime_checkable
class Embedder(Protocol):
    name: str
    dim: int

    def encode(self, texts: list[str]) -> np.ndarray:
        """L2-normalized float32 vectors, one row per text."""
