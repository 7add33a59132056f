"""How a vector is kept in Neo4j: float32 bytes (what hippo loads) and a float list (what
the vector indexes read), on a (:Vector) node named by the record's ``embed_hash``."""

from __future__ import annotations

import numpy as np

VECTOR_DTYPE = np.dtype("<f4")


def vector_bytes(vector: np.ndarray) -> bytes:
    return np.ascontiguousarray(vector, dtype=VECTOR_DTYPE).tobytes()


def vector_list(vector: np.ndarray) -> list[float]:
    return np.asarray(vector, dtype=np.float32).astype(np.float64).tolist()


def vector_of(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype=VECTOR_DTYPE).astype(np.float32)
