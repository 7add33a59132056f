"""Text helpers shared by extraction, indexing and recall."""

from __future__ import annotations

import re
import unicodedata

# Any run of characters that is not a letter or digit in any script.
_NON_WORD = re.compile(r"[\W_]+", re.UNICODE)
_WORD = re.compile(r"\w+", re.UNICODE)


def normalize(name: str) -> str:
    """The matching key of an entity name.

    NFKC folds compatibility forms (full-width Latin, ligatures), casefold
    lowercases beyond ASCII ("Straße" == "STRASSE"), and every run of
    punctuation becomes one space. Unlike HippoRAG's ``[^A-Za-z0-9 ]`` filter,
    letters of every script survive: "Thomas Südhof" -> "thomas südhof",
    "東京都" -> "東京都".
    """
    folded = unicodedata.normalize("NFKC", name).casefold()
    return _NON_WORD.sub(" ", folded).strip()


def keyword_tokens(text: str) -> list[str]:
    """The words BM25 counts: lower-cased ``\\w+`` runs with diacritics removed (what FTS5's
    unicode61 tokenizer does). The Neo4j store keeps them on each passage (``words``) for its
    full-text index, so both sides count the same words."""
    if text.isascii():  # NFKD leaves ASCII as it is: skip the per-character pass
        return _WORD.findall(text.lower())
    decomposed = unicodedata.normalize("NFKD", text)
    stripped = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return _WORD.findall(stripped.casefold())


def alnum_count(key: str) -> int:
    return sum(ch.isalnum() for ch in key)


def approx_tokens(text: str) -> int:
    """A cheap token estimate (about 4 characters a token for English)."""
    return max(1, (len(text) + 3) // 4) if text else 0


_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+")


def split_passages(text: str, max_chars: int) -> list[str]:
    """Split a document into passages of at most about ``max_chars``.

    Paragraphs are kept whole when they fit; longer ones are cut at sentence
    ends, never inside a sentence unless the sentence alone is too long.
    """
    text = text.strip()
    if len(text) <= max_chars:
        return [text] if text else []
    pieces = [piece for paragraph in re.split(r"\n\s*\n", text) for piece in cut_paragraph(paragraph, max_chars)]
    return pack(pieces, max_chars)


def cut_paragraph(paragraph: str, max_chars: int) -> list[str]:
    """A paragraph whole when it fits, else its sentences (a sentence too long alone is cut)."""
    paragraph = paragraph.strip()
    if len(paragraph) <= max_chars:
        return [paragraph] if paragraph else []
    pieces: list[str] = []
    for sentence in _SENTENCE_END.split(paragraph):
        while len(sentence) > max_chars:
            pieces.append(sentence[:max_chars])
            sentence = sentence[max_chars:]
        if sentence:
            pieces.append(sentence)
    return pieces


def pack(pieces: list[str], max_chars: int) -> list[str]:
    """Join consecutive pieces with a space while they fit ``max_chars``."""
    passages: list[str] = []
    current = ""
    for piece in pieces:
        if current and len(current) + 1 + len(piece) > max_chars:
            passages.append(current)
            current = piece
        else:
            current = f"{current} {piece}" if current else piece
    if current:
        passages.append(current)
    return passages
