"""Document converters side by side: markitdown vs docling on the same generated files.

    python benchmarks/converters.py --converter markitdown     # in an env with markitdown[pdf,docx,pptx]
    python benchmarks/converters.py --converter docling        # in an env with docling

Each run converts one HTML page, one DOCX, one PPTX, one two-page PDF and one
Markdown file (written by ``tests/document_files.py`` with python-docx,
python-pptx and fpdf2) and scores what came out: headings kept as Markdown
headings, body sentences intact, page breaks (PDF), the table (DOCX), page
chrome left out (HTML). It times the import and each file (median of three
warm runs) and sums the installed size of the library and everything it
requires. Results land in ``results/converters-<name>.json``; the Markdown
table in ``results/converters.md`` holds every converter measured so far.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import RESULTS, machine_info, machine_line, markdown_table, offline, write_outputs  # noqa: E402
from tests.document_files import SECTIONS, write_all  # noqa: E402

DISTRIBUTIONS = {"markitdown": ("markitdown", {"pdf", "docx", "pptx"}), "docling": ("docling", set())}


def install_mb(name: str, extras: set[str]) -> tuple[float, float, int]:
    """(MB of the distribution and every requirement it pulls in, of which torch/CUDA/triton, count)."""
    from packaging.requirements import Requirement

    seen: dict[str, float] = {}
    todo: list[tuple[str, set[str]]] = [(name, extras)]
    while todo:
        dist_name, wanted = todo.pop()
        key = dist_name.lower().replace("_", "-")
        if key in seen:
            continue
        try:
            dist = metadata.distribution(dist_name)
        except metadata.PackageNotFoundError:
            continue
        seen[key] = sum((f.size or 0) for f in dist.files or []) / 1e6
        for raw in dist.requires or []:
            req = Requirement(raw)
            if req.marker is None or any(req.marker.evaluate({"extra": e}) for e in wanted or {""}):
                todo.append((req.name, set(req.extras)))
    heavy = sum(mb for k, mb in seen.items() if k.startswith(("torch", "nvidia", "triton")))
    return round(sum(seen.values()), 1), round(heavy, 1), len(seen)


def _markitdown() -> Callable[[Path], str]:
    from markitdown import MarkItDown

    converter = MarkItDown()
    return lambda path: converter.convert(str(path)).markdown


def _docling() -> Callable[[Path], str]:
    from docling.document_converter import DocumentConverter

    converter = DocumentConverter()
    return lambda path: converter.convert(str(path)).document.export_to_markdown()


def score(kind: str, markdown: str) -> dict[str, object]:
    """What a reader of the output gets: headings, sentences, pages, table, chrome."""
    flat = " ".join(markdown.split())
    headings = [t for chapter, parts in SECTIONS for t in (chapter, *(h for h, _ in parts))]
    heading_lines = {re.sub(r"^#+\s*", "", line).strip() for line in markdown.splitlines()
                     if line.lstrip().startswith("#")}
    sentences = [s for _, parts in SECTIONS for _, body in parts for s in re.split(r"(?<=\.)\s+", body)]
    found = {
        "headings": f"{sum(h in heading_lines for h in headings)}/{len(headings)}",
        "sentences": f"{sum(s in flat for s in sentences)}/{len(sentences)}",
    }
    if kind == "pdf":
        found["page breaks"] = markdown.count("\f")
    if kind == "docx":
        found["table"] = "| 1868 |" in flat.replace("  ", " ") or bool(re.search(r"\|\s*1868\s*\|", flat))
    if kind == "html":
        found["chrome left out"] = "About" not in markdown and "var x" not in markdown
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--converter", choices=sorted(DISTRIBUTIONS), required=True)
    args = parser.parse_args()
    offline()
    name = args.converter
    started = time.perf_counter()
    convert = {"markitdown": _markitdown, "docling": _docling}[name]()
    import_s = time.perf_counter() - started
    rows: dict[str, dict[str, object]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for kind, path in write_all(Path(tmp)).items():
            times: list[float] = []
            try:
                for _ in range(3):
                    t0 = time.perf_counter()
                    markdown = convert(path)
                    times.append(time.perf_counter() - t0)
                rows[kind] = {"ms": round(statistics.median(times) * 1000, 1), **score(kind, markdown),
                              "first_chars": markdown[:120]}
            except Exception as exc:  # a converter that cannot read a kind is a result, not a crash
                rows[kind] = {"error": f"{type(exc).__name__}: {str(exc)[:160]}"}
    total, heavy, count = install_mb(*DISTRIBUTIONS[name])
    record = {"converter": name, "version": metadata.version(DISTRIBUTIONS[name][0]), "import_s": round(import_s, 2),
              "install_mb": total, "install_mb_torch_cuda": heavy, "distributions": count, "files": rows,
              "machine": machine_info()}
    write_outputs(f"converters-{name}", record, "")  # JSON only; the table below collects every converter
    (RESULTS / f"converters-{name}.md").unlink(missing_ok=True)
    records = [json.loads(p.read_text()) for p in sorted(RESULTS.glob("converters-*.json"))]
    table_rows = []
    for r in records:
        for kind, row in r["files"].items():
            detail = row.get("error") or ", ".join(f"{k} {v}" for k, v in row.items()
                                                   if k not in ("ms", "first_chars"))
            table_rows.append([f"{r['converter']} {r['version']}", kind, row.get("ms", "–"), detail])
    sizes = "; ".join(f"{r['converter']}: {r['install_mb']} MB in {r['distributions']} distributions "
                      f"({r['install_mb_torch_cuda']} MB of it torch/CUDA), import {r['import_s']} s"
                      for r in records)
    text = (f"# Document converters\n\n{sizes}\n\n"
            + markdown_table(["converter", "file", "ms (median of 3)", "what came out"], table_rows)
            + f"\n\nMachine: {machine_line(record['machine'])}\n")
    (RESULTS / "converters.md").write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
