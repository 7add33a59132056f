"""Access control: what recall costs when a restricted space of equal size shares the store.

The corpus is split in two halves of equal size. Store A holds the first half
in ``org`` only. Store B holds the same first half in ``org`` and the second
half in a restricted space (``team:restricted``). Recall latency over the
dataset's questions, measured in one run:

- ``A engine``: store A, ``Memory.recall`` with no spaces (no access control);
- ``A scoped``: store A through ``ScopedMemory`` as a user who reads ``org``
  and their own space (the access-control path, nothing hidden);
- ``B scoped``: store B, the same user: half the graph is hidden from them
  (the walk runs on their view, cached per read set);
- ``B admin``: store B through ``ScopedMemory`` as an admin, who sees both
  halves (twice the visible graph, for scale);
- ``A forgot one``: store A again (a copy, indexed the same way), after one
  memory was remembered and forgotten: the forgotten passage's edges stay in
  the graph, unwalked, so every reader walks a checked path.

The overhead of access control is ``B scoped`` against ``A engine`` (and
``A scoped``). Hybrid ``retrieve`` is measured the same way.

    python benchmarks/access.py --dataset hipporag_musique_train100
    python benchmarks/access.py --dataset hipporag_2wiki_tune500 --quick 150 --repeat 2
    python benchmarks/access.py --smoke
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

try:
    from benchmarks.common import (RESULTS, Stopwatch, igraph_single_thread, log, machine_info, machine_line,
                                   markdown_table, offline, percentiles, progress_printer, write_outputs)
except ImportError:  # run as ``python benchmarks/access.py``
    from common import (RESULTS, Stopwatch, igraph_single_thread, log, machine_info, machine_line,  # type: ignore
                        markdown_table, offline, percentiles, progress_printer, write_outputs)

offline()

import hippo  # noqa: E402
from hippo.access import ScopedMemory, admin_principal, derive_principal  # noqa: E402
from hippo.datasets import load_dataset  # noqa: E402
from hippo.ids import document_id  # noqa: E402

RESTRICTED = "team:restricted"
DEFAULT_DATASET = "hipporag_musique_train100"  # small enough for exact PPR; 2Wiki's graph walks by local push


def split(documents: list[hippo.Document]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Two halves of equal size, as documents with explicit ids (so both stores agree on them)."""
    docs = [{"id": d.id or document_id(d.title, d.text), "title": d.title, "text": d.text} for d in documents]
    half = len(docs) // 2
    return docs[:half], docs[half : 2 * half]


def timed(call: Callable[[str], Any], questions: Sequence[str], samples: dict[str, list[float]]) -> None:
    """Append wall milliseconds per call (and, for recalls, without the query embedding) to ``samples``."""
    for q in questions:
        start = time.perf_counter()
        result = call(q)
        ms = (time.perf_counter() - start) * 1000
        samples.setdefault("wall_ms", []).append(ms)
        timings = getattr(result, "timings", None)
        if timings:
            samples.setdefault("wall_minus_embed_ms", []).append(ms - timings.get("embed", 0.0) * 1000)


def build(path: Path, parts: list[tuple[list[dict[str, Any]], str]], embedder: Any) -> tuple[hippo.Memory, float]:
    memory = hippo.Memory(hippo.store.SQLiteStore(path), embedder=embedder)
    with Stopwatch() as watch:
        for docs, space in parts:
            memory.index(docs, space=space, progress=progress_printer(f"{path.stem} {space}"))
    return memory, watch.seconds


def measure(args: argparse.Namespace) -> dict[str, Any]:
    from hippo.embed import SentenceEmbedder

    dataset = load_dataset(args.dataset)
    questions = [q.question for q in (dataset.questions[: args.quick] if args.quick else dataset.questions)]
    visible, hidden = split(dataset.documents)
    embedder = SentenceEmbedder(hippo.Settings().embedding_model)
    user = derive_principal("bench-user")
    runs: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="hippo-access-") as scratch:
        log(f"indexing store A ({len(visible)} documents in org)")
        a, a_index_s = build(Path(scratch) / "a.db", [(visible, "org")], embedder)
        log(f"indexing store B ({len(visible)} in org + {len(hidden)} in {RESTRICTED})")
        b, b_index_s = build(Path(scratch) / "b.db", [(visible, "org"), (hidden, RESTRICTED)], embedder)
        log(f"indexing store A again ({len(visible)} documents in org), then remembering and forgetting one memory")
        forgot, _ = build(Path(scratch) / "forgot.db", [(visible, "org")], embedder)
        forgot.forget(forgot.remember("A passing note about a meeting in Lisbon, to be forgotten.").uid)
        try:
            cases = {
                "A engine": (a.recall, lambda q: a.retrieve(q, k=10, mode="hybrid")),
                "A scoped": (ScopedMemory(a, user).recall,
                             lambda q: ScopedMemory(a, user).retrieve(q, k=10, mode="hybrid")),
                "B scoped": (ScopedMemory(b, user).recall,
                             lambda q: ScopedMemory(b, user).retrieve(q, k=10, mode="hybrid")),
                "B admin": (ScopedMemory(b, admin_principal()).recall,
                            lambda q: ScopedMemory(b, admin_principal()).retrieve(q, k=10, mode="hybrid")),
                "A forgot one": (forgot.recall, lambda q: forgot.retrieve(q, k=10, mode="hybrid")),
            }
            with igraph_single_thread():
                samples: dict[str, dict[str, dict[str, list[float]]]] = {
                    name: {"recall": {}, "retrieve_hybrid": {}} for name in cases}
                for recall, retrieve in cases.values():  # warm-up: models, graph views, caches
                    for q in questions[: args.warmup]:
                        recall(q)
                        retrieve(q)
                # Interleave the cases pass by pass so load from other processes hits them alike.
                for _ in range(args.repeat):
                    for name, (recall, retrieve) in cases.items():
                        timed(lambda q, r=recall: r(q, k=10), questions, samples[name]["recall"])
                        timed(retrieve, questions, samples[name]["retrieve_hybrid"])
            for name, calls in samples.items():
                runs[name] = {call: {metric: percentiles(values) for metric, values in metrics.items()}
                              for call, metrics in calls.items()}
            runs["A engine"]["passages_visible"] = a.graph_stats()["passages"]
            runs["A scoped"]["passages_visible"] = len(visible_passages(a, user.read_spaces()))
            runs["B scoped"]["passages_visible"] = len(visible_passages(b, user.read_spaces()))
            runs["B admin"]["passages_visible"] = b.graph_stats()["passages"]
            runs["A forgot one"]["passages_visible"] = forgot.graph_stats()["passages"]
            graphs = {"A": a.graph_stats(), "B": b.graph_stats()}
        finally:
            for memory in (a, b, forgot):
                memory.close()
    return {"dataset": dataset.name, "documents_visible": len(visible), "documents_restricted": len(hidden),
            "questions": len(questions), "repeat": args.repeat, "index_s": {"A": a_index_s, "B": b_index_s},
            "graphs": graphs, "runs": runs}


def visible_passages(memory: hippo.Memory, spaces: frozenset[str] | None) -> list[int]:
    return memory.engine.state.projection.view(spaces).passage_vertices.tolist()


def render(record: dict[str, Any]) -> str:
    base = record["runs"]["A engine"]["recall"]["wall_ms"]["p50"]
    rows = []
    for name, run in record["runs"].items():
        r, nr, h = run["recall"]["wall_ms"], run["recall"].get("wall_minus_embed_ms", {}), run["retrieve_hybrid"]
        rows.append([name, run.get("passages_visible", "–"), f"{r['p50']:.2f}", f"{r['p95']:.2f}",
                     f"{nr.get('p50', float('nan')):.2f}", f"{(r['p50'] / base - 1) * 100:+.1f}%",
                     f"{h['wall_ms']['p50']:.2f}", f"{h['wall_ms']['p95']:.2f}"])
    graphs = record["graphs"]
    return "\n".join([
        f"# Access control: recall latency with a restricted space of equal size ({record['dataset']})", "",
        f"Machine: {machine_line(record['machine'])}.", "",
        f"Store A: {record['documents_visible']} documents in org ({graphs['A']['passages']} passages). "
        f"Store B: the same plus {record['documents_restricted']} documents in {RESTRICTED} "
        f"({graphs['B']['passages']} passages in all). \"A forgot one\": store A built again, then one memory "
        f"remembered and forgotten. {record['questions']} questions x {record['repeat']} "
        f"interleaved passes, after {record['warmup']} warm-up queries per case; SQLite; milliseconds.", "",
        markdown_table(["case", "visible passages", "recall p50", "recall p95", "recall p50 w/o embed",
                        "recall p50 vs A engine", "hybrid retrieve p50", "hybrid retrieve p95"], rows),
        "", f"Command: `{record['command']}`",
    ])


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", default=DEFAULT_DATASET)
    parser.add_argument("--repeat", type=int, default=3, help="passes over the questions, interleaved by case")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--quick", type=int, metavar="N", help="only the first N questions")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--smoke", action="store_true", help="seconds-long check on hipporag_sample")
    args = parser.parse_args(argv)
    if args.smoke:
        args.dataset, args.repeat, args.warmup = "hipporag_sample", 1, 1
        args.out = Path(tempfile.mkdtemp(prefix="hippo-bench-"))
    return args


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    record = measure(args)
    record.update(warmup=args.warmup, machine=machine_info(),
                  command="python benchmarks/access.py " + " ".join(sys.argv[1:] if argv is None else argv))
    markdown = render(record)
    stem = "access" if args.dataset == DEFAULT_DATASET else f"access-{args.dataset}"  # each set its own record
    json_path, md_path = write_outputs(stem, record, markdown, args.out)
    print(markdown)
    log(f"wrote {json_path} and {md_path}")
    return record


if __name__ == "__main__":
    main()
