"""Import HippoRAG OpenIE result files, so LLM triples made elsewhere work offline.

Both layouts are read: v1 (``docs[].title, text, passage`` where ``passage`` may
be a Python repr of "title\\ntext") and v2 (``docs[].idx, passage``); both carry
``extracted_entities`` and ``extracted_triples``. Bare ``NaN`` values, which
HippoRAG writes for empty averages, are tolerated.
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


class OpenIEImport:
    """An extractor that looks passages up in a HippoRAG OpenIE file.

    Passages the file does not cover go to ``fallback`` (spaCy by default), so
    a partial file still yields a complete graph.
    """

    def __init__(self, by_text: dict[str, Extraction], source: str, fallback: Extractor | None = None):
        self.name = f"openie:{source}"
        self._by_text = by_text
        self._fallback = fallback
        self.missed = 0

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
        for doc in docs:
            if not isinstance(doc, dict):
                continue
            extraction = _extraction(doc)
            title, text, passage = _text(doc.get("title")), _text(doc.get("text")), _passage_text(doc)
            for candidate in (passage, text, f"{title}\n{text}" if title and text else None):
                if candidate:
                    by_text.setdefault(_key(candidate), extraction)
        return cls(by_text, path.name, fallback)

    def __len__(self) -> int:
        return len(self._by_text)

    def extract(self, passages: list[Passage]) -> list[Extraction]:
        found: list[Extraction | None] = [
            self._by_text.get(_key(p.embed_text)) or self._by_text.get(_key(p.text)) for p in passages
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
