"""Documents as people have them: real files written by python-docx, python-pptx and fpdf2,
read through markitdown, split on headings and pages, with source, page and heading path
on every passage, every hit and every RCP citation; ``hippo index DIR`` as a subprocess."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import rcp

from hippo import InvalidInput
from hippo.datasets import SAMPLE
from hippo.documents import MissingExtra, read_file, read_paths, split_document
from hippo.documents import convert as convert_module
from hippo.server import Service
from hippo.server.config import ServerSettings
from hippo.server.http import background
from hippo.text import split_passages
from tests.document_files import SECTIONS, write_all

INVENTION = SECTIONS[0][1][0][1]
ENGRAVER = SECTIONS[1][1][1][1]


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    return write_all(tmp_path_factory.mktemp("files"))


# -- splitting (pure) -----------------------------------------------------------------------


def test_plain_text_splits_exactly_as_before(sample_corpus):
    long = "\n\n".join(doc["text"] for doc in sample_corpus)
    for text, size in ((long, 300), (long, 1500), (sample_corpus[0]["text"], 100)):
        assert [c.text for c in split_document(text, size)] == split_passages(text, size)
        assert all(c.page is None and c.headings == () for c in split_document(text, size))


def test_a_passage_never_straddles_a_heading_and_knows_its_page():
    body = " ".join(f"Sentence {i} of the first part." for i in range(30))  # ~900 characters
    text = (f"Intro line.\n\n# Part one\n\n{body}\n\n## Details\n\nShort details.\f\nStill details.\n\n"
            "```\n# a comment, not a heading\n```\n\n# Part two\n\nLast words.")
    chunks = split_document(text, 400)
    assert [c.headings for c in chunks] == [(), *[("Part one",)] * 3, ("Part one", "Details"), ("Part two",)]
    assert all(len(c.text) <= 400 for c in chunks)
    details = chunks[4]
    assert details.page == 1 and "Still details." in details.text and "# a comment" in details.text
    assert chunks[5].page == 2 and chunks[5].text == "Part two\n\nLast words."
    # Every sentence lands in exactly one passage, under its own heading.
    assert sum(c.text.count("of the first part.") for c in chunks) == 30
    assert not any("Short details" in c.text for c in chunks[:4])


# -- converters --------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["html", "docx", "md"])
def test_headings_become_the_heading_path(files, kind):
    [doc] = read_file(files[kind])
    chunks = split_document(doc.text, 1500)
    paths = [c.headings for c in chunks if INVENTION in " ".join(c.text.split())]
    assert paths == [("The tide-clock", "Invention")]
    assert doc.source == str(files[kind])
    assert "Home" not in doc.text or "](/" not in doc.text  # HTML links read as their words


def test_pdf_pages_and_outline_headings(files):
    [doc] = read_file(files["pdf"])
    assert doc.title == "Tide-clock handbook"  # the PDF's own title, not the file name
    chunks = split_document(doc.text, 1500)
    where = {c.headings[-1]: c.page for c in chunks}
    assert where == {"Invention": 1, "Manufacture": 1, "Tobiah Sudhof": 2, "Ada Lind": 2}


def test_pptx_slides_are_pages(files):
    [doc] = read_file(files["pptx"])
    chunks = split_document(doc.text, 1500)
    assert [(c.page, c.headings) for c in chunks] == [(1, ("The tide-clock",)), (2, ("The founders",))]


def test_damaged_files_are_one_clear_error(tmp_path, files):
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4\n" + os.urandom(300))
    (tmp_path / "broken.docx").write_bytes(files["pptx"].read_bytes()[:500])  # a truncated zip
    for name, says in (("broken.pdf", "is not a readable PDF"), ("broken.docx", "is not a readable DOCX")):
        with pytest.raises(Exception, match=says):
            read_file(tmp_path / name)


def test_reading_a_folder_reports_each_file_before_reading_it(files):
    seen: list[tuple[str, int, int]] = []
    reading = read_paths([files["pdf"].parent], on_file=lambda path, done, total: seen.append((path.name, done, total)))
    total = len(reading.files)
    assert total >= 4 and seen[-1][1:] == (total, total)  # the last call says "all done"
    assert [name for name, _, _ in seen[:-1]] == [path.name for path in reading.files]
    assert [done for _, done, _ in seen[:-1]] == list(range(total))


def test_a_missing_extra_names_it(files, monkeypatch):
    convert_module._markitdown.cache_clear()
    monkeypatch.setitem(sys.modules, "markitdown", None)
    try:
        with pytest.raises(MissingExtra, match=r"pip install 'hippo\[documents\]'"):
            read_file(files["docx"])
        with pytest.raises(MissingExtra):
            read_paths([files["pdf"].parent])
        assert read_file(files["md"])  # Markdown and text need no converter
    finally:
        convert_module._markitdown.cache_clear()


# -- Memory.index, hits and RCP citations ------------------------------------------------------------


def test_memory_indexes_a_folder_and_hits_cite_page_and_headings(files, open_memory, tmp_path):
    memory = open_memory()
    assert memory.index([files["pdf"]]).passages_added == 4
    hit = memory.recall("Who engraved the dials of every tide-clock?", k=1).hits[0]
    assert (hit.source, hit.page, hit.headings) == (str(files["pdf"]), 2, ["The founders", "Ada Lind"])
    assert ENGRAVER in " ".join(hit.text.split())
    with background(Service(memory, ServerSettings())) as url:
        [cited] = rcp.connect_http(url).retrieve("Ada Lind engraved the dials", k=1, opts={"mode": "dense"})
    assert cited["citation"] == {"source": str(files["pdf"]), "title": "Tide-clock handbook", "page": 2,
                                 "headings": ["The founders", "Ada Lind"]}

    result = memory.index([files["pdf"].parent])  # a folder: every file in it
    assert result.documents == 5 and result.passages_added == 3 * 4 + 2 + 1  # HTML keeps its nav line
    # Indexing the same folder again changes nothing; an edited file is a new version of its document.
    assert memory.index([files["pdf"].parent]).passages_added == 0
    edited = tmp_path / "notes.md"
    edited.write_text("# Notes\n\nThe first draft.", encoding="utf-8")
    memory.index([edited])
    edited.write_text("# Notes\n\nThe second draft.", encoding="utf-8")
    again = memory.index([edited])
    assert again.documents_updated == 1 and again.passages_retired == 1
    with pytest.raises(InvalidInput, match=r"documents\[0\]: .*nowhere\.pdf: does not exist"):
        memory.index([tmp_path / "nowhere.pdf"])


# -- the command ------------------------------------------------------------------------------------


def test_index_a_folder_skips_counts_and_names_every_failing_file(files, tmp_path):
    folder = tmp_path / "mixed"
    folder.mkdir()
    for kind in ("pdf", "docx", "html"):
        (folder / files[kind].name).write_bytes(files[kind].read_bytes())
    (folder / "sample").mkdir()
    corpus = json.loads((SAMPLE / "corpus.json").read_text(encoding="utf-8"))[:2]
    (folder / "sample" / "corpus.json").write_text(json.dumps(corpus), encoding="utf-8")
    (folder / "sample" / "questions.json").write_bytes((SAMPLE / "questions.json").read_bytes())  # not a corpus
    (folder / "corrupt.pdf").write_bytes(b"%PDF-1.7\nnot really a pdf")
    (folder / "photo.png").write_bytes(b"\x89PNG\r\n")
    (folder / ".hidden.md").write_text("# secret", encoding="utf-8")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "200", "TTY_COMPATIBLE": "1", "TTY_INTERACTIVE": "1"}
    done = subprocess.run([sys.executable, "-m", "hippo.cli", "index", str(folder), "--store",
                           str(tmp_path / "cli.db"), "--json"], capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 1, done.stderr
    errors = [line for line in done.stderr.splitlines() if "error:" in line]
    assert len(errors) == 2, done.stderr
    assert any(f"{folder / 'corrupt.pdf'}: is not a readable PDF" in line for line in errors)
    assert any(f"{folder / 'sample' / 'questions.json'}: corpus[0]: needs a string 'text' field" in line
               for line in errors)
    assert "Traceback" not in done.stderr  # which file the bar names depends on when it last redrew
    result = json.loads(re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", done.stdout))  # a terminal gets colours
    assert result["files"] == 4 and result["skipped"] == {".png": 1} and len(result["failed"]) == 2
    assert result["documents"] == 3 + 2 and result["passages_added"] == 3 * 4 + 1 + 2
