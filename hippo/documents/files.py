"""Paths -> documents: one file, or every supported file under a folder.

Corpora (``.json`` ``[{title, text}]``, ``.jsonl``) give their documents;
Markdown and plain text are read as they are; PDF, HTML, DOCX and PPTX go
through ``hippo.documents.convert``. A file's documents carry its path as
``source`` and an id derived from the file's absolute path (and space), so
indexing an edited file again makes a new version of the same document
instead of a second document.

Reading a folder never stops at a bad file: each failure is reported with the
file's path, unsupported files are counted by suffix, and the rest is read.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from hippo.datasets import corpus_documents
from hippo.documents.convert import CONVERTED, MissingExtra, convert_file
from hippo.errors import HippoError, InvalidInput
from hippo.ids import file_document_id
from hippo.models import DEFAULT_SPACE, Document

TEXT = {".md": "markdown", ".markdown": "markdown", ".txt": "text"}
CORPORA = {".json", ".jsonl"}
SUPPORTED = frozenset({*TEXT, *CORPORA, *CONVERTED})


@dataclass
class FileError:
    path: Path
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


@dataclass
class Reading:
    """What reading some paths gave: documents, the files they came from, skips and failures."""

    documents: list[Document] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)  # read successfully
    skipped: Counter[str] = field(default_factory=Counter)  # unsupported files by suffix
    errors: list[FileError] = field(default_factory=list)

    @property
    def skipped_total(self) -> int:
        return sum(self.skipped.values())


def _title(stem: str) -> str:
    return " ".join(stem.replace("_", " ").replace("-", " ").split()) or stem


def _jsonl(path: Path) -> list[object]:
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise InvalidInput(f"line {n}", f"is not valid JSON: {exc.msg}") from None
    return rows


def _json(path: Path) -> object:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise InvalidInput("text", f"is not valid UTF-8 (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise InvalidInput("json", f"is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}") from None


def read_file(path: Path, *, space: str = DEFAULT_SPACE) -> list[Document]:
    """The documents of one supported file; raises ``HippoError`` (without the path) on a bad one."""
    suffix = path.suffix.lower()
    if suffix == ".json":
        return corpus_documents(_json(path), source=path.name)
    if suffix == ".jsonl":
        return corpus_documents(_jsonl(path), source=path.name)
    source = str(path)
    if suffix in TEXT:
        try:
            text, title = path.read_text(encoding="utf-8"), None
        except UnicodeDecodeError as exc:
            raise InvalidInput("text", f"is not valid UTF-8 (byte {exc.start})") from None
    elif suffix in CONVERTED:
        converted = convert_file(path)
        text, title = converted.markdown, converted.title
    else:
        raise InvalidInput("path", f"{suffix or 'a file without a suffix'} is not a supported kind "
                                   f"({', '.join(sorted(SUPPORTED))})")
    if not text.strip():
        raise InvalidInput("text", "is empty (nothing to index)")
    return [Document(id=file_document_id(str(path.resolve()), space), title=title or _title(path.stem),
                     text=text, source=source, space=space)]


def walk(paths: Iterable[Path]) -> tuple[list[Path], Counter[str], list[FileError]]:
    """Supported files under the paths (folders recursively, sorted; hidden ones left out),
    unsupported ones counted by suffix, paths that do not exist."""
    files: list[Path] = []
    skipped: Counter[str] = Counter()
    missing: list[FileError] = []
    for path in paths:
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.is_file()
                           and not any(part.startswith(".") for part in p.relative_to(path).parts))
        elif path.exists():
            found = [path]
        else:
            missing.append(FileError(path, "does not exist"))
            continue
        for file in found:
            if file.suffix.lower() in SUPPORTED:
                files.append(file)
            else:
                skipped[file.suffix.lower() or "(none)"] += 1
    return files, skipped, missing


def read_paths(paths: Iterable[Path | str], *, space: str | None = None,
               check: Callable[[list[Document]], list[Document]] | None = None,
               on_file: Callable[[Path, int, int], None] | None = None) -> Reading:
    """Read every supported file; ``on_file(path, done, total)`` is called before each one.

    ``check`` validates one file's documents (``Memory.index``'s rules), so a
    file over a limit is one error too. A missing extra stops the reading
    (every later file of that kind would fail the same way); any other failure
    is one ``FileError`` and reading goes on.
    """
    files, skipped, errors = walk(Path(p) for p in paths)
    reading = Reading(skipped=skipped, errors=errors)
    for done, file in enumerate(files):
        if on_file is not None:
            on_file(file, done, len(files))
        try:
            documents = read_file(file, space=space or DEFAULT_SPACE)
            if check is not None:
                documents = check(documents)
        except MissingExtra:
            raise
        except HippoError as exc:
            reading.errors.append(FileError(file, str(exc)))
            continue
        except OSError as exc:
            reading.errors.append(FileError(file, exc.strerror or str(exc)))
            continue
        reading.documents.extend(documents)
        reading.files.append(file)
    if on_file is not None and files:
        on_file(files[-1], len(files), len(files))
    return reading


def expand_paths(items: Iterable[object], *, space: str | None = None) -> list[object]:
    """``Memory.index``'s input with every path (``pathlib.Path``, any ``os.PathLike``) replaced by
    the documents of its files. The first file that cannot be read raises, naming it: the call
    writes nothing then. Unsupported files inside a folder are left out; one named alone is an error."""
    expanded: list[object] = []
    for i, item in enumerate(items):
        if not isinstance(item, os.PathLike):
            expanded.append(item)
            continue
        path = Path(item)
        files, _, missing = walk([path])
        if missing:
            raise InvalidInput(f"documents[{i}]", str(missing[0]))
        if path.is_file() and not files:
            raise InvalidInput(f"documents[{i}]", f"{path}: {path.suffix or 'a file without a suffix'} is not a "
                                                  f"supported kind ({', '.join(sorted(SUPPORTED))})")
        for file in files:
            try:
                expanded.extend(read_file(file, space=space or DEFAULT_SPACE))
            except MissingExtra:
                raise
            except (HippoError, OSError) as exc:
                raise InvalidInput(f"documents[{i}]", f"{file}: {exc}") from None
    return expanded
