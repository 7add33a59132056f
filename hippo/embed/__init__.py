"""Text -> unit vectors. ONNX Runtime (fp32) by default, sentence-transformers' torch as the reference.

``open_embedder`` picks the backend from ``Settings.embedding_backend``
(env ``HIPPO_EMBEDDING_BACKEND``): ``onnx-int8``, ``onnx`` or ``torch``.
Anything with ``name``, ``dim``, ``backend`` and ``encode`` is an embedder.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

import numpy as np

from hippo.embed.sentence import SentenceEmbedder, resolve_model

if TYPE_CHECKING:
    from hippo.config import Settings

__all__ = ["BACKENDS", "Embedder", "EmbeddingBackend", "SentenceEmbedder", "backend_of", "open_embedder",
           "resolve_model"]

log = logging.getLogger("hippo.embed")

EmbeddingBackend = Literal["onnx-int8", "onnx", "torch"]
BACKENDS: tuple[str, ...] = ("onnx-int8", "onnx", "torch")


@runtime_checkable
class Embedder(Protocol):
    name: str
    dim: int

    def encode(self, texts: list[str]) -> np.ndarray:
        """L2-normalized float32 vectors, one row per text."""


def backend_of(embedder: Embedder) -> str:
    """The backend that made an embedder's vectors; embedders that do not say are torch's."""
    return str(getattr(embedder, "backend", "torch"))


def open_embedder(settings: Settings, *, threads: int | None = None) -> Embedder:
    """The configured encoder; torch, with one logged line saying why, when ONNX cannot run here.

    ``threads`` (default ``settings.embedding_threads``, unset: all cores) is the
    intra-op thread count: all cores for indexing, one in a server process,
    whose requests already run side by side.
    """
    threads = threads or settings.embedding_threads
    backend = settings.embedding_backend
    if backend != "torch":
        from hippo.embed.export import ExportUnavailable

        try:
            from hippo.embed.onnx import OnnxEmbedder

            return OnnxEmbedder(settings.embedding_model, quantized=backend == "onnx-int8", threads=threads)
        except ExportUnavailable as exc:
            log.warning("embedding backend %s is unavailable (%s); using torch", backend, exc)
    if threads:
        import torch

        torch.set_num_threads(threads)  # process-wide: the server's setting
    return SentenceEmbedder(settings.embedding_model, batch_size=settings.embedding_batch_size)
