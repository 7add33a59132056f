"""Files as people have them -> Markdown with page breaks, through markitdown.

markitdown (Microsoft) reads PDF, HTML, DOCX and PPTX into Markdown; it was
chosen over docling for its size (252 MB installed against 6.2 GB, most of it
a second torch with CUDA), its import time (0.6 s against 26 s) and because
docling's PDF pipeline needs layout models fetched from a hub at run time,
which hippo never does (``benchmarks/converters.py``, ``results/converters.md``).

What markitdown leaves out is added here, from the same files:

- PDF: pages. Pages are joined with form feeds (``\\f``), which
  ``hippo.documents.sections`` counts. The PDF's outline (its bookmarks) marks
  the heading lines it names as Markdown headings, so a PDF with bookmarks
  splits on its sections too. pypdfium2 (which markitdown's PDF reader brings)
  opens the file first: markitdown itself turns an unreadable PDF into its raw
  bytes as text.
- PPTX: one page per slide.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from hippo.errors import HippoError
from hippo.text import normalize

EXTRA = "documents"
CONVERTED = {".pdf": "pdf", ".html": "html", ".htm": "html", ".docx": "docx", ".pptx": "pptx"}
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)\s]*(?:\s+\"[^\"]*\")?\)")
_SLIDE = re.compile(r"^<!-- Slide number: \d+ -->[ \t]*$", re.MULTILINE)


class MissingExtra(HippoError):
    """An optional dependency group is not installed; the message names it."""


class UnreadableFile(HippoError):
    """A file that is not what its name says (a corrupt PDF, a broken DOCX)."""


@dataclass(frozen=True)
class Converted:
    markdown: str
    title: str | None = None


def _need(feature: str) -> MissingExtra:
    return MissingExtra(f"reading {feature} files needs the '{EXTRA}' extra: pip install 'hippo[{EXTRA}]'")


@cache
def _markitdown() -> Any:
    try:
        from markitdown import MarkItDown
    except ImportError:
        raise _need("PDF, HTML, DOCX and PPTX") from None
    return MarkItDown(enable_plugins=False)


def _convert(data: bytes | Path, suffix: str) -> Any:
    from markitdown import MissingDependencyException, StreamInfo

    stream = io.BytesIO(data) if isinstance(data, bytes) else data.open("rb")
    try:
        return _markitdown().convert_stream(stream, stream_info=StreamInfo(extension=suffix))
    except MissingDependencyException:
        raise _need(suffix) from None
    finally:
        stream.close()


def convert_file(path: Path) -> Converted:
    """Markdown of a PDF, HTML, DOCX or PPTX file. Raises ``UnreadableFile`` for a damaged one."""
    kind = CONVERTED.get(path.suffix.lower())
    if kind is None:
        raise ValueError(f"not a converted kind: {path.suffix}")
    _markitdown()  # the extra is missing: say so before anything else
    if kind == "pdf":
        return _pdf(path)
    try:
        result = _convert(path, path.suffix.lower())
    except (MissingExtra, OSError):
        raise
    except Exception as exc:  # each reader raises its own (zipfile.BadZipFile, lxml, ...)
        raise UnreadableFile(f"is not a readable {kind.upper()} file ({type(exc).__name__}: "
                             f"{_first_line(exc)})") from None
    markdown = _plain_links(result.markdown or "")
    if kind == "pptx":
        markdown = _slides_as_pages(markdown)
    return Converted(markdown, (result.title or "").strip() or None)


def _plain_links(markdown: str) -> str:
    """``[text](url)`` -> ``text`` and ``![alt](src)`` -> ``alt``: a passage is read (by the
    embedder, BM25 and people), and link targets are noise to all three."""
    return _LINK.sub(lambda m: m.group(1), markdown)


def _slides_as_pages(markdown: str) -> str:
    slides = _SLIDE.split(markdown)
    if len(slides) > 1 and not slides[0].strip():
        slides = slides[1:]
    return "\f".join(s.strip("\n") for s in slides)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:200] if text else ""


# -- PDF ------------------------------------------------------------------------------


def _pdf(path: Path) -> Converted:
    try:
        import pypdfium2 as pdfium
    except ImportError:
        raise _need(".pdf") from None
    try:
        document = pdfium.PdfDocument(path)
    except pdfium.PdfiumError as exc:
        raise UnreadableFile(f"is not a readable PDF ({_first_line(exc)})") from None
    try:
        pages = _pdf_pages(document, path)
        outline = _outline(document)
        title = (document.get_metadata_value("Title") or "").strip() or None
    except (MissingExtra, OSError):
        raise
    except Exception as exc:  # opened, but its pages cannot be read (pdfminer, pdfplumber errors)
        raise UnreadableFile(f"is not a readable PDF ({type(exc).__name__}: {_first_line(exc)})") from None
    finally:
        document.close()
    for page, entries in outline.items():
        if page < len(pages):
            pages[page] = _mark_headings(pages[page], entries)
    return Converted("\f".join(pages), title)


def _pdf_pages(document: Any, path: Path) -> list[str]:
    """One text per page: markitdown separates pages with form feeds when it reads the whole
    file as prose; when it does not (pages it reads as forms or tables), each page is read alone."""
    count = len(document)
    whole = _convert(path, ".pdf").markdown or ""
    pages = whole.split("\f")
    if len(pages) > count and not "".join(pages[count:]).strip():
        pages = pages[:count]  # pdfminer ends the last page with a form feed too
    if len(pages) == count:
        return pages
    import pypdfium2 as pdfium

    read: list[str] = []
    for index in range(count):
        single = pdfium.PdfDocument.new()
        try:
            single.import_pages(document, [index])
            buffer = io.BytesIO()
            single.save(buffer)
        finally:
            single.close()
        read.append((_convert(buffer.getvalue(), ".pdf").markdown or "").replace("\f", "\n"))
    return read


def _outline(document: Any) -> dict[int, list[tuple[int, str]]]:
    """Bookmarks by page index: (level from 1, title)."""
    found: dict[int, list[tuple[int, str]]] = {}
    try:
        for bookmark in document.get_toc(max_depth=6):
            title = (bookmark.get_title() or "").strip()
            dest = bookmark.get_dest()
            index = dest.get_index() if dest is not None else None
            if title and index is not None:
                found.setdefault(index, []).append((bookmark.level + 1, title))
    except Exception:  # a damaged outline costs the headings, never the text
        return {}
    return found


def _mark_headings(page: str, entries: list[tuple[int, str]]) -> str:
    """Turn the line each bookmark names into a Markdown heading; a bookmark whose line is not
    found (wrapped, or drawn as an image) becomes a heading at the top of its page."""
    lines = page.split("\n")
    cursor = 0
    missing: list[str] = []
    for level, title in entries:
        key = normalize(title)
        at = next((i for i in range(cursor, len(lines)) if normalize(lines[i]) == key), None)
        if at is None:
            missing.append(f"{'#' * level} {title}")
            continue
        lines[at] = f"{'#' * level} {title}"
        cursor = at + 1
    return "\n".join([*missing, *lines]) if missing else "\n".join(lines)
