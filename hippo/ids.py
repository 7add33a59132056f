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


def document_id(title: str, text: str, space: str = "org") -> str:
    """A document without a caller id. Outside ``org`` the space is part of the id: the same
    text in two users' spaces is two documents, and neither can touch (or detect) the other."""
    parts = (title, text) if space == "org" else (space, title, text)
    return f"doc:{_digest(*parts)[:20]}"


def file_document_id(path: str, space: str = "org") -> str:
    """A document read from a file: keyed by its absolute path, so an edited file indexed again
    is the next version of the same document (its text is not part of the id).

    Not ``doc:``: the reader hands it to ``Memory.index`` as a caller's id, and a
    caller may not give ids of the forms hippo derives (``hippo.spaces``)."""
    return f"file:{_digest('file', space, path)[:20]}"


def passage_id(doc_id: str, text: str, version: int = 1) -> str:
    """A passage of one version of a document: a new version never reuses an old id,
    so every version stays in the store as history."""
    parts = (doc_id, text) if version == 1 else (doc_id, text, f"v{version}")
    return f"passage:{_digest(*parts)[:20]}"


def memory_id(space: str, key: str) -> str:
    """A remembered memory: ``key`` is the caller's custom id, or the text's hash."""
    return f"memory:{_digest(space, key)[:20]}"


def entity_id(key: str) -> str:
    """``key`` is the normalized name (see ``hippo.text.normalize``)."""
    return f"entity:{_digest(key)[:20]}"


def fact_id(passage_id: str, subject_key: str, predicate: str, object_key: str) -> str:
    return f"fact:{_digest(passage_id, subject_key, predicate, object_key)[:20]}"
