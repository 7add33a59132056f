"""Entity names as the reader's own passages write them.

An entity is stored once per normalized key, with the surface form of
whichever passage named it first. That passage may sit in a space the reader
cannot see, and its spelling ("Tobiah-Südhof" vs "Tobiah Südhof") would then
leak into the reader's seeds and nodes. A reader gets instead the spelling
found in the first passage they may see that mentions the entity (store
order), else the normalized key: the same name a store that never held the
hidden passages would give.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from hippo.graph.projection import GraphProjection
from hippo.graph.view import GraphView
from hippo.store.base import Store


@lru_cache(maxsize=8_192)  # seed names recur across recalls; compiling one costs ~10x a search
def _pattern(key: str) -> re.Pattern[str]:
    words = key.split()
    return re.compile(r"(?<!\w)" + r"[\W_]+".join(re.escape(w) for w in words) + r"(?!\w)", re.IGNORECASE)


_ASCII_WORD = re.compile(r"[A-Za-z0-9]+")


def surface_form(key: str, text: str) -> str | None:
    """The span of ``text`` that normalizes to ``key``, if one does."""
    if not key:
        return None
    if key.isascii() and text.isascii():
        return _ascii_surface_form(key.split(), text)
    found = _pattern(key).search(unicodedata.normalize("NFKC", text))
    return " ".join(found.group(0).split()) if found else None


def _ascii_surface_form(words: list[str], text: str) -> str | None:
    r"""``surface_form`` for ASCII, without a pattern compiled per key (most names a recall meets are
    new to it, and compiling was ~1 ms of a 2Wiki recall): the key's words matched against the text's
    runs of letters and digits, in order and case-insensitively, the first such span not joined to
    an ``_`` on either side (the pattern's ``(?<!\w)``, ``(?!\w)``; any other gap is its ``[\W_]+``).
    Only where the first word occurs are runs read (reading every run of a passage was ~0.3 ms a
    name, 2 ms of a 2Wiki recall's names)."""
    lowered, first = text.lower(), words[0]
    at = lowered.find(first)
    while at >= 0:
        run = _ASCII_WORD.match(text, at)
        if run is not None and run.end() - at == len(first) and not (at and _is_run_char(text[at - 1])):
            end = _end_of_words(text, lowered, run.end(), words[1:])
            if end is not None and "_" not in text[at - 1 : at] + text[end : end + 1]:
                return " ".join(text[at:end].split())
        at = lowered.find(first, at + 1)
    return None


def _is_run_char(c: str) -> bool:
    return c.isascii() and c.isalnum()


def _end_of_words(text: str, lowered: str, start: int, words: list[str]) -> int | None:
    """Where the runs after ``start`` end if they are ``words``, in order (None if they are not)."""
    end = start
    runs = _ASCII_WORD.finditer(text, start)
    for word in words:
        run = next(runs, None)
        if run is None or lowered[run.start() : run.end()] != word:
            return None
        end = run.end()
    return end


def spelled_name(key: str, title: str | None, text: str | None) -> str:
    """An entity's name as a passage spells it (its title first, then its text), else its key."""
    return surface_form(key, title or "") or surface_form(key, text or "") or key


def visible_names(store: Store, projection: GraphProjection, view: GraphView, entity_ids: list[str]) -> dict[str, str]:
    """Display names of entities for the reader of ``view``."""
    vertices = {eid: projection.vertex[eid] for eid in dict.fromkeys(entity_ids) if eid in projection.vertex}
    if not vertices:
        return {}
    firsts = view.first_passages(list(vertices.values()))
    first = {eid: projection.record_ids[firsts[v]] for eid, v in vertices.items() if v in firsts}
    passages = {p.id: p for p in store.passages(set(first.values()))}
    names: dict[str, str] = {}
    for entity in store.entities(list(vertices)):
        passage = passages.get(first.get(entity.id, ""))
        names[entity.id] = entity.key if passage is None else spelled_name(entity.key, passage.title, passage.text)
    return names
