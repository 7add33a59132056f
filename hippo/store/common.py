"""What both stores do the same way, written once: the keyword query, the order of records
read by id, the errors a write or a re-embedding refuses with."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import TypeVar

from hippo.errors import Conflict
from hippo.store.base import EmbeddingIdentity

T = TypeVar("T")

WORD = re.compile(r"\w+", re.UNICODE)
"""A keyword: a run of letters and digits of any script (``\\w+``)."""


def keyword_query(text: str) -> str:
    """Every word quoted, OR'ed: user text can never be read as FTS5 or Lucene syntax.

    Words are ``\\w+`` runs, so they hold no quote or backslash; both stores search the
    same words.
    """
    words = dict.fromkeys(w.lower() for w in WORD.findall(text))
    return " OR ".join(f'"{w}"' for w in words)


def chunks(items: list[T], size: int) -> Iterator[list[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def in_order(wanted: list[str], found: Mapping[str, T]) -> list[T]:
    """Records in the order their ids were asked for; unknown ids left out."""
    return [found[i] for i in wanted if i in found]


def check_versions(expected: Mapping[str, int], stored: Mapping[str, int]) -> None:
    """Refuse a write planned on document versions another writer has moved since (optimistic
    concurrency): ``stored`` is what the store holds now, an absent document being version 0."""
    for doc_id, version in expected.items():
        found = stored.get(doc_id, 0)
        if found != version:
            raise Conflict(f"document {doc_id} is at version {found}, not {version}: another writer changed it; "
                           "nothing was written")


def nothing_staged(identity: EmbeddingIdentity) -> Conflict:
    return Conflict(f"no vectors are staged for {identity.describe()}; nothing was changed")


def texts_unstaged(missing: int) -> Conflict:
    return Conflict(f"{missing} stored texts have no staged vector (written since the re-embedding began); "
                    "nothing was changed")
