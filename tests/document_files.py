"""Small real documents written by the libraries people's files come from.

An HTML page, a Word file (python-docx), a slide deck (python-pptx) and a
multi-page PDF (fpdf2), each with headings, so the tests and the converter
benchmark read what a converter really has to read, never hand-made bytes.
Every file tells the same short story in sections, so a test can ask where a
sentence ended up (which heading, which page).
"""

from __future__ import annotations

import html
from pathlib import Path

SECTIONS: list[tuple[str, list[tuple[str, str]]]] = [
    ("The tide-clock", [
        ("Invention", "The tide-clock was invented by Tobiah Sudhof in 1868 in the harbour town of Caldry. "
                      "It measured the tides with a float that turned a brass dial."),
        ("Manufacture", "Sudhof and Lind Horology built the tide-clock in a workshop on Morrowen until 1903. "
                        "Each clock took eleven weeks to finish."),
    ]),
    ("The founders", [
        ("Tobiah Sudhof", "Tobiah Sudhof was a clockmaker born on the island of Morrowen. "
                          "He co-founded Sudhof and Lind Horology with the engraver Ada Lind."),
        ("Ada Lind", "Ada Lind engraved the dials of every tide-clock. She later taught engraving in Caldry."),
    ]),
]


def _paragraphs() -> list[tuple[int, str]]:
    """(heading level, text) for headings, level 0 for body paragraphs."""
    rows: list[tuple[int, str]] = []
    for chapter, parts in SECTIONS:
        rows.append((1, chapter))
        for heading, body in parts:
            rows.append((2, heading))
            rows.append((0, body))
    return rows


def write_html(path: Path) -> Path:
    body = []
    for level, text in _paragraphs():
        tag = f"h{level}" if level else "p"
        body.append(f"<{tag}>{html.escape(text)}</{tag}>")
    nav = "<nav><a href='/'>Home</a> | <a href='/about'>About</a></nav>"
    path.write_text(f"<!doctype html><html><head><title>Tide-clock handbook</title>"
                    f"<style>p {{ color: #333 }}</style><script>var x = 1;</script></head>"
                    f"<body>{nav}<main>{''.join(body)}</main></body></html>", encoding="utf-8")
    return path


def write_docx(path: Path) -> Path:
    import docx

    document = docx.Document()
    document.core_properties.title = "Tide-clock handbook"
    for level, text in _paragraphs():
        if level:
            document.add_heading(text, level=level)
        else:
            document.add_paragraph(text)
    table = document.add_table(rows=2, cols=2)
    for (r, c), value in zip([(0, 0), (0, 1), (1, 0), (1, 1)], ["Year", "Clocks built", "1868", "12"],
                             strict=True):
        table.cell(r, c).text = value
    document.save(str(path))
    return path


def write_pptx(path: Path) -> Path:
    from pptx import Presentation

    deck = Presentation()
    layout = deck.slide_layouts[1]  # title and content
    for chapter, parts in SECTIONS:
        slide = deck.slides.add_slide(layout)
        slide.shapes.title.text = chapter
        slide.placeholders[1].text = "\n".join(body for _, body in parts)
    deck.save(str(path))
    return path


def write_pdf(path: Path, *, page_per_chapter: bool = True) -> Path:
    """Each chapter starts a new page: the converter must tell which page a sentence is on."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_auto_page_break(auto=True, margin=15)
    pdf.set_title("Tide-clock handbook")
    first = True
    for level, text in _paragraphs():
        if level == 1 and (first or page_per_chapter):
            pdf.add_page()
            first = False
        if level:
            pdf.start_section(text, level=level - 1)  # the PDF outline (bookmarks) a reader shows
            pdf.set_font("Helvetica", style="B", size=20 if level == 1 else 15)
            pdf.multi_cell(0, 10, text, new_x="LMARGIN", new_y="NEXT")
        else:
            pdf.set_font("Helvetica", size=11)
            pdf.multi_cell(0, 6, text, new_x="LMARGIN", new_y="NEXT")
            pdf.ln(3)
    pdf.output(str(path))
    return path


def write_markdown(path: Path) -> Path:
    lines = []
    for level, text in _paragraphs():
        lines.append(f"{'#' * level} {text}" if level else text)
        lines.append("")
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def write_all(folder: Path) -> dict[str, Path]:
    """One file of each kind in ``folder``, by suffix."""
    folder.mkdir(parents=True, exist_ok=True)
    return {
        "html": write_html(folder / "handbook.html"),
        "docx": write_docx(folder / "handbook.docx"),
        "pptx": write_pptx(folder / "handbook.pptx"),
        "pdf": write_pdf(folder / "handbook.pdf"),
        "md": write_markdown(folder / "handbook.md"),
    }
