"""Stable ids: derived from content or from the caller's key, never random.

The same input always gets the same id, so re-indexing is a no-op and ids
survive restarts and moving between stores.
"""

from __future__ import annotations

import hashlib


def _digest(*parts: str) -> str:
    # NUL cannot occur in the parts' meaning, so joined parts never collide.
    return hashlib.sha1("\x00".join(parts).encode("utf-8")).hexdigest()


def text_hash(text: str) -> str:
    """Key of an embedding: the vector of a text does not depend on its record."""
    return _digest(text)


def document_id(title: str, text: str) -> str:
    return f"doc:{_digest(title, text)[:20]}"


def passage_id(doc_id: str, text: str) -> str:
    return f"passage:{_digest(doc_id, text)[:20]}"


def entity_id(key: str) -> str:
    """``key`` is the normalized name (see ``hippo.text.normalize``)."""
    return f"entity:{_digest(key)[:20]}"


def fact_id(passage_id: str, subject_key: str, predicate: str, object_key: str) -> str:
    return f"fact:{_digest(passage_id, subject_key, predicate, object_key)[:20]}"
