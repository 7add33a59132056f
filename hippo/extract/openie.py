"""Import HippoRAG OpenIE result files, so LLM triples made elsewhere work offline.

Both layouts are read: v1 (``docs[].title, text, passage`` where ``passage`` may
be a Python repr of "title\\ntext") and v2 (``docs[].idx, passage``); both carry
``extracted_entities`` and ``extracted_triples``. Bare ``NaN`` values, which
HippoRAG writes for empty averages, are tolerated.

A record covers one whole paragraph; hippo splits a paragraph longer than
``passage_chars`` into several passages. Such a chunk is matched to the
record whose text contains it (same title first), and takes the record's
triples and entities that it names (``chunk_extraction``).
"""

from __future__ import annotations

import ast
import json
import math
import re
from pathlib import Path
from typing import Any

from hippo.errors import InvalidInput
from hippo.extract.base import Extraction, Extractor, NamedEntity, Triple
from hippo.models import Passage
from hippo.text import normalize

_SPACE = re.compile(r"\s+")


def _key(text: str) -> str:
    return _SPACE.sub(" ", text).strip().casefold()


def _text(value: Any) -> str | None:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    text = str(value).strip()
    return text or None


def _passage_text(doc: dict[str, Any]) -> str | None:
    passage = _text(doc.get("passage"))
    if passage and passage[0] in "'\"" and passage[-1] == passage[0]:
        try:  # v1 stores repr(title + "\n" + text)
            passage = str(ast.literal_eval(passage))
        except (ValueError, SyntaxError):
            pass
    return passage


def _extraction(doc: dict[str, Any]) -> Extraction:
    entities = [NamedEntity(name=n) for raw in doc.get("extracted_entities") or [] if (n := _text(raw))]
    triples = []
    for raw in doc.get("extracted_triples") or []:
        if not isinstance(raw, list | tuple) or len(raw) != 3:
            continue  # HippoRAG drops malformed triples too
        parts = [_text(x) for x in raw]
        if all(parts):
            triples.append(Triple(subject=parts[0], predicate=parts[1], object=parts[2]))
    return Extraction(entities=entities, triples=triples)


def _names(text: str, name: str) -> bool:
    key = normalize(name)
    return bool(key) and f" {key} " in f" {text} "


def chunk_extraction(record: Extraction, paragraph: str, chunk: str) -> Extraction:
    """The part of a whole paragraph's extraction that belongs to one of its chunks.

    A triple belongs to every chunk that names its subject or its object (the
    LLM resolved pronouns, so "He was born in Montebello" still names
    Montebello); an entity to every chunk that names it. What the paragraph
    never names verbatim goes to its first chunk, so nothing is lost.
    """
    chunk_key, paragraph_key = normalize(chunk), normalize(paragraph)
    first = paragraph_key.startswith(chunk_key)

    def belongs(*names: str) -> bool:
        if any(_names(chunk_key, n) for n in names):
            return True
        return first and not any(_names(paragraph_key, n) for n in names)

    return Extraction(entities=[e for e in record.entities if belongs(e.name)],
                      triples=[t for t in record.triples if belongs(t.subject, t.object)])


class OpenIEImport:
    """An extractor that looks passages up in a HippoRAG OpenIE file.

    Passages the file does not cover go to ``fallback`` (spaCy by default), so
    a partial file still yields a complete graph.
    """

    def __init__(self, by_text: dict[str, Extraction], source: str, fallback: Extractor | None = None,
                 paragraphs: dict[str, list[tuple[str, Extraction]]] | None = None):
        self.name = f"openie:{source}"
        self._by_text = by_text
        self._fallback = fallback
        self._paragraphs = paragraphs or {}  # title key -> (paragraph text, extraction), for chunks
        self.missed = 0
        self.chunks = 0  # passages matched as a chunk of a longer record

    @classmethod
    def from_file(cls, path: str | Path, fallback: Extractor | None = None) -> OpenIEImport:
        path = Path(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))  # Python's json accepts NaN
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise InvalidInput("openie_file", f"cannot read {path}: {exc}") from exc
        docs = data.get("docs") if isinstance(data, dict) else data
        if not isinstance(docs, list):
            raise InvalidInput("openie_file", f"{path} has no 'docs' list (not a HippoRAG OpenIE file)")
        by_text: dict[str, Extraction] = {}
        paragraphs: dict[str, list[tuple[str, Extraction]]] = {}
        for doc in docs:
            if not isinstance(doc, dict):
                continue
            extraction = _extraction(doc)
            title, text, passage = _text(doc.get("title")), _text(doc.get("text")), _passage_text(doc)
            for candidate in (passage, text, f"{title}\n{text}" if title and text else None):
                if candidate:
                    by_text.setdefault(_key(candidate), extraction)
            body = text or passage
            if body:
                paragraphs.setdefault(_key(title or ""), []).append((body, extraction))
        return cls(by_text, path.name, fallback, paragraphs)

    def __len__(self) -> int:
        return len(self._by_text)

    def _chunk(self, passage: Passage) -> Extraction | None:
        """The extraction of a record this passage is a chunk of: one with the same title, else an
        untitled one (v2 records keep the title inside ``passage``). Only those are searched, so
        a passage the file does not cover costs a look at its namesakes, not the whole file."""
        chunk = _key(passage.text)
        title = _key(passage.title)
        for key in dict.fromkeys((title, "")):
            for paragraph, extraction in self._paragraphs.get(key, []):
                if chunk in _key(paragraph):
                    self.chunks += 1
                    return chunk_extraction(extraction, paragraph, passage.text)
        return None

    def extract(self, passages: list[Passage]) -> list[Extraction]:
        found: list[Extraction | None] = [
            self._by_text.get(_key(p.embed_text)) or self._by_text.get(_key(p.text)) or self._chunk(p)
            for p in passages
        ]
        missing = [i for i, e in enumerate(found) if e is None]
        self.missed += len(missing)
        if missing and self._fallback is not None:
            for i, extraction in zip(missing, self._fallback.extract([passages[i] for i in missing]), strict=True):
                found[i] = extraction
        results = []
        for passage, extraction in zip(passages, found, strict=True):
            extraction = extraction or Extraction()
            if passage.title:  # the title is an entity of its passage, as with spaCy
                extraction = Extraction(
                    entities=[NamedEntity(name=passage.title, type="TITLE"), *extraction.entities],
                    triples=extraction.triples,
                )
            results.append(extraction)
        return results
