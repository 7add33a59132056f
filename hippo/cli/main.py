"""The ``hippo`` command: index, recall, retrieve, remember, forget, restore, history, stats, reembed, compact,
relink, demo, doctor."""

from __future__ import annotations

import json
import os
import runpy
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, TypeVar

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # models come from packages, never the network

import typer
from rich.markup import escape
from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from hippo.cli.common import StoreOption, err, fail, out
from hippo.cli.keys import keys_app
from hippo.cli.neo4j import neo4j_app
from hippo.cli.serve import mcp, serve
from hippo.errors import HippoError

app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__)
T = TypeVar("T")
JsonOption = Annotated[bool, typer.Option("--json", help="print JSON instead of a table")]


@contextmanager
def _memory(store: Any) -> Iterator[Any]:
    with err.status("loading models..."):
        from hippo.memory import Memory

        memory = Memory.open(store)
    with memory:
        yield memory


def _with_memory(store: str | None, work: Callable[[Any], T]) -> T:
    """Run ``work`` on the opened memory; a HippoError becomes one line and exit code 2."""
    try:
        with _memory(store) as memory:
            return work(memory)
    except HippoError as exc:
        raise fail(str(exc)) from None


def _read_files(paths: list[Path], space: str | None) -> Any:
    """Every supported file under ``paths``, with a bar advancing per file; a bad file is one error."""
    from hippo.config import Settings
    from hippo.documents import read_paths
    from hippo.memory.indexing import validate_documents

    settings = Settings()
    with Progress(TextColumn("{task.description:>10}"), BarColumn(), TaskProgressColumn(), TimeElapsedColumn(),
                  TextColumn("[dim]{task.fields[file]}"), console=err, transient=True) as bar:
        task = bar.add_task("read", total=None, file="")

        def on_file(path: Path, done: int, total: int) -> None:
            bar.update(task, completed=done, total=total, file=path.name)

        return read_paths(paths, space=space, on_file=on_file,
                          check=lambda docs: validate_documents(docs, settings, space))


@contextmanager
def _progress() -> Iterator[Callable[[str, int, int], None]]:
    """A ``progress(stage, done, total)`` callback drawing one bar per stage on stderr."""
    with Progress(TextColumn("{task.description:>10}"), BarColumn(), TaskProgressColumn(), TimeElapsedColumn(),
                  console=err, transient=True) as bar:
        tasks: dict[str, Any] = {}

        def progress(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                tasks[stage] = bar.add_task(stage, total=total)
            bar.update(tasks[stage], completed=done, total=total)

        yield progress


def _index(memory: Any, documents: list[Any], *, space: str | None = None, extractor: Any = None) -> Any:
    with _progress() as progress:
        return memory.index(documents, space=space, extractor=extractor, progress=progress)


@app.command()
def index(
    paths: Annotated[list[Path], typer.Argument(help="files and folders: PDF, HTML, DOCX, PPTX, Markdown, text, "
                                                     "JSON ([{title,text}]) and JSONL corpora")],
    store: StoreOption = None,
    space: Annotated[str | None, typer.Option(help="space the passages belong to [default org]")] = None,
    openie: Annotated[Path | None, typer.Option(help="HippoRAG OpenIE results file to take triples from")] = None,
    as_json: JsonOption = False,
) -> None:
    """Index documents into the knowledge graph (already stored passages are skipped).

    Folders are read recursively; unsupported files are skipped and counted, and a file
    that cannot be read is one error line naming it while the rest is indexed (exit code 1).
    """
    try:
        reading = _read_files(paths, space)
        for problem in reading.errors:
            err.print(f"[red]error:[/red] {escape(str(problem))}", highlight=False, soft_wrap=True)
        if not reading.documents:
            raise fail(f"nothing to index in {', '.join(map(str, paths))}"
                        + (f" ({len(reading.errors)} failed)" if reading.errors else ""))
        with _memory(store) as memory:
            extractor = None
            if openie is not None:
                from hippo.extract import OpenIEImport

                extractor = OpenIEImport.from_file(openie, fallback=memory.extractor)
            result = _index(memory, reading.documents, space=space, extractor=extractor)
    except HippoError as exc:
        raise fail(str(exc)) from None
    files = {"files": len(reading.files), "skipped": dict(reading.skipped), "failed": [str(e) for e in reading.errors]}
    if as_json:
        out.print_json(json.dumps({**result.model_dump(mode="json"), **files}))
    else:
        skipped = ", ".join(f"{n} {suffix}" for suffix, n in sorted(reading.skipped.items()))
        out.print(f"read {len(reading.files)} files" + (f", skipped {reading.skipped_total} unsupported ({skipped})"
                                                        if skipped else "")
                  + (f", {len(reading.errors)} failed" if reading.errors else ""), highlight=False)
        out.print(f"indexed {result.documents} documents: {result.passages_added} new passages "
                  f"({result.passages_unchanged} unchanged), {result.entities_added} entities, "
                  f"{result.facts_added} facts, {result.synonyms_added} synonym edges; revision {result.revision}")
    if reading.errors:
        raise typer.Exit(1)


def _print_recall(result: Any, width: int = 110) -> None:
    out.print(f"[bold]{result.query}[/bold]  [dim]strategy: {result.strategy}[/dim]")
    if result.note:
        out.print(f"[dim]{result.note}[/dim]")
    clues = Table(title="clues", title_justify="left", show_edge=False)
    for column in ("weight", "kind", "query", "seed ids"):
        clues.add_column(column)
    for clue in result.clues:
        clues.add_row(f"{clue.weight or 0:.3f}", clue.kind, clue.query or "", ", ".join(clue.seed_ids))
    out.print(clues)
    hits = Table(title="draft hits", title_justify="left", show_edge=False)
    located = any(hit.source or hit.page or hit.headings for hit in result.hits)
    for column in ("#", "score", "title", *(["where"] if located else []), "text"):
        hits.add_column(column, overflow="fold" if column == "text" else "ellipsis")
    for rank, hit in enumerate(result.hits, 1):
        text = hit.text if len(hit.text) <= width else hit.text[: width - 1] + "…"
        hits.add_row(str(rank), f"{hit.score:.4f}", hit.title, *([hit.location] if located else []), text)
    out.print(hits)



@app.command()
def recall(
    question: Annotated[str, typer.Argument(help="the question to recall memory for")],
    store: StoreOption = None,
    n: Annotated[int, typer.Option("-n", help="maximum clues")] = 5,
    k: Annotated[int, typer.Option("-k", help="maximum hits")] = 5,
    budget: Annotated[int | None, typer.Option(help="token budget for hit text")] = None,
    space: Annotated[list[str] | None, typer.Option(help="readable space (repeat); default all")] = None,
    as_json: JsonOption = False,
) -> None:
    """Clues and draft hits for a question, ranked by Personalized PageRank."""
    result = _with_memory(store, lambda memory: memory.recall(question, n=n, k=k, token_budget=budget, spaces=space))
    if as_json:
        out.print_json(result.model_dump_json(by_alias=True))
    else:
        _print_recall(result)


@app.command()
def retrieve(
    question: Annotated[str, typer.Argument()],
    store: StoreOption = None,
    k: Annotated[int, typer.Option("-k")] = 5,
    mode: Annotated[str, typer.Option(help="dense, bm25 or hybrid")] = "hybrid",
    as_json: JsonOption = False,
) -> None:
    """Plain retrieval without the graph (the baselines)."""
    hits = _with_memory(store, lambda memory: memory.retrieve(question, k=k, mode=mode))
    if as_json:
        out.print_json(json.dumps([h.model_dump(by_alias=True) for h in hits]))
        return
    for rank, hit in enumerate(hits, 1):
        where = f" [dim]({hit.location})[/dim]" if hit.source or hit.headings else ""
        out.print(f"{rank}. [{hit.score:.4f}] [bold]{hit.title}[/bold]{where} {hit.text[:100]}")


def _print_model(result: Any) -> None:
    out.print_json(result.model_dump_json(by_alias=True))


@app.command()
def remember(
    text: Annotated[str, typer.Argument(help="the fact, preference or decision (at most 8 KiB)")],
    store: StoreOption = None,
    custom_id: Annotated[str | None, typer.Option(
        "--id", help="idempotency key: same key, new text = new version")] = None,
    label: Annotated[str | None, typer.Option(help="a short label [default: the first line]")] = None,
    space: Annotated[str, typer.Option(help="space the memory belongs to")] = "org",
    create: Annotated[bool, typer.Option("--create", help="store an exact duplicate instead of reusing it")] = False,
) -> None:
    """Remember one small text, searchable the moment the command returns."""
    def work(memory: Any) -> Any:
        result = memory.remember(text, custom_id=custom_id, label=label, space=space,
                                 on_near_duplicate="create" if create else "reuse")
        if not result.embedded:
            memory.wait_embedded(timeout=120)  # this process is about to exit: finish the vectors
        return result

    _print_model(_with_memory(store, work))


@app.command()
def forget(
    uid: Annotated[str | None, typer.Argument(help="uid of a memory, document or passage")] = None,
    store: StoreOption = None,
    custom_id: Annotated[str | None, typer.Option("--id", help="the memory's custom id instead of its uid")] = None,
    space: Annotated[str, typer.Option(help="space of --id")] = "org",
    dry_run: Annotated[bool, typer.Option("--dry-run", help="list what would be forgotten; change nothing")] = False,
    reason: Annotated[str | None, typer.Option(help="why (kept with the tombstone)")] = None,
) -> None:
    """Forget reversibly (a tombstone); prints what it touched and how to undo it."""
    _print_model(_with_memory(store, lambda memory: memory.forget(uid, custom_id=custom_id, space=space,
                                                                  dry_run=dry_run, reason=reason)))


@app.command()
def restore(uid: Annotated[str, typer.Argument()], store: StoreOption = None) -> None:
    """Bring back what a forget took out."""
    _print_model(_with_memory(store, lambda memory: memory.restore(uid)))


@app.command()
def history(
    custom_id: Annotated[str, typer.Argument(metavar="KEY", help="the memory's custom id (or a uid with --uid)")],
    store: StoreOption = None,
    space: Annotated[str, typer.Option(help="space of the memory")] = "org",
    by_uid: Annotated[bool, typer.Option("--uid", help="KEY is a uid (memory or document)")] = False,
    as_json: JsonOption = False,
) -> None:
    """Every version of a memory, oldest first."""
    versions = _with_memory(store, lambda memory: memory.history(uid=custom_id) if by_uid
                            else memory.history(custom_id, space=space))
    if as_json:
        out.print_json(json.dumps([v.model_dump(mode="json", by_alias=True) for v in versions]))
        return
    for v in versions:
        when = v.created_at.isoformat(timespec="seconds") if v.created_at else "?"
        out.print(f"v{v.version} [{v.state}] {when}  {v.text}", highlight=False, markup=False)


@app.command()
def stats(store: StoreOption = None, as_json: JsonOption = False) -> None:
    """Counts of what the memory holds."""
    counts = _with_memory(store, lambda memory: {
        **memory.stats().model_dump(), **{f"graph_{k}": v for k, v in memory.graph_stats().items()}})
    if as_json:
        out.print_json(json.dumps(counts))
        return
    table = Table(show_header=False, show_edge=False)
    for key, value in counts.items():
        table.add_row(key, str(value))
    out.print(table)


@app.command()
def reembed(
    store: StoreOption = None,
    backend: Annotated[str | None, typer.Option(help="onnx-int8, onnx or torch [env HIPPO_EMBEDDING_BACKEND]")] = None,
    force: Annotated[bool, typer.Option("--force", help="re-embed even when the store already matches")] = False,
    as_json: JsonOption = False,
) -> None:
    """Re-embed every stored vector with the configured encoder; the old vectors are replaced atomically."""
    from hippo.memory.reembed import reembed_url

    try:
        with err.status("loading the encoder..."), _progress() as progress:
            result = reembed_url(store, backend=backend, force=force, progress=progress)
    except HippoError as exc:
        raise fail(str(exc)) from None
    out.print_json(result.model_dump_json()) if as_json else out.print(result.summary(), highlight=False)


@app.command()
def compact(store: StoreOption = None, as_json: JsonOption = False) -> None:
    """Keep an older SQLite store's vectors at float16 (half their bytes) and give freed pages back to the disk."""
    from hippo.store.compact import compact_url

    try:
        with _progress() as progress:
            result = compact_url(store, progress=lambda done, total: progress("float16", done, total))
    except HippoError as exc:
        raise fail(str(exc)) from None
    out.print_json(result.model_dump_json()) if as_json else out.print(result.summary(), highlight=False)


@app.command()
def relink(store: StoreOption = None, as_json: JsonOption = False) -> None:
    """Link again whole the vector graphs an older hippo saved with fewer links than graphs of their size get
    today (32 from 500k rows), or as one graph past vector_graph_rows (2M: split into several), and save
    them; nothing else changes. Stop servers on the store first."""
    from hippo.memory.relink import relink_url

    try:
        with err.status("linking graphs again (about an hour for 10M rows)..."):
            result = relink_url(store)
    except HippoError as exc:
        raise fail(str(exc)) from None
    out.print_json(result.model_dump_json()) if as_json else out.print(result.summary(), highlight=False)


@app.command()
def demo(
    store: StoreOption = ":memory:",
    questions: Annotated[int, typer.Option(help="how many sample questions to show")] = 3,
) -> None:
    """Index the bundled sample corpus and show clues and hits for its questions."""
    from hippo.datasets import SAMPLE, load_dataset
    from hippo.evaluation import recall_at

    try:
        dataset = load_dataset(SAMPLE)
        with _memory(store) as memory:
            result = _index(memory, dataset.documents)
            out.print(f"indexed the sample corpus ({dataset.name}): {result.passages_added} passages, "
                      f"{result.entities_added} entities, {result.facts_added} facts, "
                      f"{result.synonyms_added} synonym edges in {sum(result.timings.values()):.1f}s\n")
            scores = []
            for i, question in enumerate(dataset.questions):
                recalled = memory.recall(question.question, k=5)
                gold = dataset.gold_document_ids(question)
                scores.append((recall_at(recalled.hits, gold, 5),
                               recall_at(memory.retrieve(question.question, k=5), gold, 5)))
                if i < questions:
                    _print_recall(recalled)
                    out.print(f"[dim]gold: {', '.join(question.gold_titles)} — answer: {question.answer}[/dim]\n")
    except HippoError as exc:
        raise fail(str(exc)) from None
    graph = sum(s[0] for s in scores) / len(scores)
    dense = sum(s[1] for s in scores) / len(scores)
    out.print(f"Recall@5 over all {len(scores)} sample questions: graph {graph:.1%}, dense {dense:.1%}")


@app.command()
def doctor(store: StoreOption = None, as_json: JsonOption = False) -> None:
    """Check the installation: versions, store, models, encoder, Neo4j, LLM endpoint, API keys."""
    from hippo.cli.doctor import markup, run

    checks = run(store, on_check=None if as_json else lambda c: out.print(markup(c), highlight=False, soft_wrap=True))
    if as_json:
        out.print_json(json.dumps([c.model_dump() for c in checks]))
    if any(c.status == "fail" for c in checks):
        raise typer.Exit(1)


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def bench(ctx: typer.Context, name: Annotated[str, typer.Argument(help="quality, speed or scale")]) -> None:
    """Run a benchmark from a source checkout's benchmarks/ folder (extra args pass through).

    Benchmarks are not package data (they need the shared tuning sets and write results/): the
    folder is ./benchmarks, else the one beside an editable install."""
    folders = [Path.cwd() / "benchmarks", Path(__file__).resolve().parents[2] / "benchmarks"]
    script = next((f / f"{name}.py" for f in folders if (f / f"{name}.py").exists()), folders[0] / f"{name}.py")
    if not script.exists():
        raise fail(f"no benchmark {name!r} (looked in {' and '.join(str(f) for f in folders)}); benchmarks ship "
                    "with the source checkout: run `hippo bench` from it")
    sys.argv = [str(script), *ctx.args]
    runpy.run_path(str(script), run_name="__main__")


app.command()(serve)
app.command()(mcp)
app.add_typer(keys_app, name="keys")
app.add_typer(neo4j_app, name="neo4j")
