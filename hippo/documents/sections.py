"""Split a document on its headings and pages before the size limit.

A document's text may be Markdown (what the converters write): an ATX heading
line (``# Title``, ``## Part``) starts a section, and a passage never holds
text of two sections. A form feed (``\\f``, as pdfminer and ``pdftotext``
write between pages) starts a new page; every passage knows the page it starts
on, counted from 1. Inside a section the usual rules apply
(``hippo.text.split_passages``): paragraphs whole when they fit, else cut at
sentence ends.

Text with neither headings nor form feeds splits exactly as before, so plain
corpora keep their passage ids. Pure functions, no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from hippo.text import cut_paragraph, split_passages

_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_EMPHASIS = re.compile(r"^[*_]{1,3}(.+?)[*_]{1,3}$")


@dataclass(frozen=True)
class Chunk:
    """One passage's text and where it sits in its document."""

    text: str
    page: int | None = None
    headings: tuple[str, ...] = ()


@dataclass
class _Section:
    headings: tuple[str, ...]
    lines: list[tuple[int | None, str]] = field(default_factory=list)  # (page, line)


def _heading(line: str) -> tuple[int, str] | None:
    found = _HEADING.match(line)
    if not found:
        return None
    title = found.group(2).strip()
    emphasis = _EMPHASIS.match(title)
    return len(found.group(1)), (emphasis.group(1) if emphasis else title).strip()


def has_structure(text: str) -> bool:
    """Whether a text holds a heading line or a page break (else it splits the plain way)."""
    return "\f" in text or any(_heading(line) for line in text.splitlines())


def sections(text: str) -> list[_Section]:
    """The document as sections, each line tagged with its page. A heading's own text opens
    its section (without the ``#`` marks), so the words of a heading are searchable."""
    page: int | None = 1 if "\f" in text else None
    stack: list[tuple[int, str]] = []
    found = [_Section(())]
    fenced = False
    for raw in text.split("\n"):
        parts = raw.split("\f")
        for n, line in enumerate(parts):
            if n and page is not None:
                page += 1
            if _FENCE.match(line):
                fenced = not fenced
            heading = None if fenced else _heading(line)
            if heading is None:
                found[-1].lines.append((page, line))
                continue
            level, title = heading
            stack = [(lv, t) for lv, t in stack if lv < level] + [(level, title)]
            found.append(_Section(tuple(t for _, t in stack), [(page, title)]))
    return found


def _pieces(section: _Section) -> list[tuple[int | None, str]]:
    """Paragraphs of a section with the page each starts on."""
    pieces: list[tuple[int | None, str]] = []
    current: list[str] = []
    start: int | None = None
    for page, line in section.lines:
        if not line.strip():
            if current:
                pieces.append((start, "\n".join(current)))
                current = []
            continue
        if not current:
            start = page
        current.append(line)
    if current:
        pieces.append((start, "\n".join(current)))
    return pieces


def split_document(text: str, max_chars: int) -> list[Chunk]:
    """Passages of a document: never across a heading, each with its page and heading path.

    A section that holds only its heading (a chapter title right before its
    first sub-heading) gives no passage of its own: its title is in the
    heading path of every passage under it.
    """
    if not has_structure(text):
        return [Chunk(chunk) for chunk in split_passages(text, max_chars)]
    chunks: list[Chunk] = []
    for section in sections(text):
        paragraphs = _pieces(section)
        if not paragraphs or (section.headings and len(paragraphs) == 1
                              and paragraphs[0][1] == section.headings[-1]):
            continue
        whole = "\n\n".join(p for _, p in paragraphs).strip()
        if len(whole) <= max_chars:  # as split_passages: a text that fits keeps its line breaks
            chunks.append(Chunk(whole, paragraphs[0][0], section.headings))
            continue
        pieces = [(page, piece) for page, paragraph in paragraphs for piece in cut_paragraph(paragraph, max_chars)]
        chunks.extend(Chunk(text, page, section.headings) for page, text in _pack(pieces, max_chars))
    return chunks


def _pack(pieces: list[tuple[int | None, str]], max_chars: int) -> list[tuple[int | None, str]]:
    """``hippo.text.pack`` for pieces tagged with a page: a passage takes its first piece's page."""
    packed: list[tuple[int | None, str]] = []
    for page, piece in pieces:
        if packed and len(packed[-1][1]) + 1 + len(piece) <= max_chars:
            packed[-1] = (packed[-1][0], f"{packed[-1][1]} {piece}")
        else:
            packed.append((page, piece))
    return packed
