"""Speed: indexing throughput, recall latency and peak memory on a dataset corpus.

For each store (a fresh temporary SQLite file by default; ``--store URL`` for
another, e.g. ``neo4j://user:pass@host:7687``, passed as is to
``Memory.open``) it measures:

- indexing: wall time and passages/s, split by ``IndexResult.timings``
  (extract, embed, graph, store write);
- recall: latency p50/p95/p99 over the dataset's questions (``--repeat``
  passes after a warm-up), split by ``RecallResult.timings`` (embed = query
  embedding, seeds = dense + fact scoring + entity linking, ppr, readout =
  read-out and clues, hits = hit assembly = total minus the rest), plus the
  total without query embedding;
- dense and BM25 ``retrieve`` latency, for scale;
- peak RSS after loading, indexing and querying.

    python benchmarks/speed.py --dataset hipporag_musique_train100
    python benchmarks/speed.py --smoke
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

try:
    from benchmarks.common import (RESULTS, Stopwatch, igraph_single_thread, log, machine_info, machine_line,
                                   make_settings, markdown_table, offline, parse_overrides, peak_rss_mb,
                                   percentiles, progress_printer, write_outputs)
except ImportError:  # run as ``python benchmarks/speed.py``
    from common import (RESULTS, Stopwatch, igraph_single_thread, log, machine_info, machine_line,  # type: ignore
                        make_settings, markdown_table, offline, parse_overrides, peak_rss_mb, percentiles,
                        progress_printer, write_outputs)

offline()

import hippo  # noqa: E402
from hippo.datasets import Dataset, Question, load_dataset  # noqa: E402
from hippo.extract import Extractor, OpenIEImport, SpacyExtractor  # noqa: E402

STAGES = ("extract", "embed", "graph", "store")
RECALL_KEYS = ("embed", "seeds", "ppr", "readout", "hits", "total", "total_minus_embed")


def make_extractor(kind: str, dataset: Dataset) -> Extractor:
    if kind == "openie":
        if dataset.openie_file is None:
            raise SystemExit(f"{dataset.name} ships no OpenIE file")
        return OpenIEImport.from_file(dataset.openie_file, fallback=SpacyExtractor())
    return SpacyExtractor()


def measure_index(memory: hippo.Memory, dataset: Dataset, extractor: Extractor) -> dict[str, Any]:
    with Stopwatch() as watch:
        result = memory.index(dataset.documents, extractor=extractor, progress=progress_printer("index"))
    passages = result.passages_added
    stages = {s: float(result.timings.get(s, 0.0)) for s in STAGES}
    return {
        "wall_s": watch.seconds,
        "passages": passages,
        "passages_per_s": passages / watch.seconds if watch.seconds else None,
        "stage_s": stages,
        "stage_passages_per_s": {s: (passages / t if t else None) for s, t in stages.items()},
        "vectors_encoded": result.vectors_encoded,
        "entities": result.entities_added,
        "facts": result.facts_added,
        "synonyms": result.synonyms_added,
        "peak_rss_mb": peak_rss_mb(),
    }


def recall_samples(memory: hippo.Memory, questions: Sequence[Question], repeat: int,
                   warmup: int) -> tuple[dict[str, list[float]], dict[str, int]]:
    """Milliseconds per recall stage for every (pass, question); strategies counted on the first pass."""
    for q in questions[:warmup]:
        memory.recall(q.question, k=10)
    samples: dict[str, list[float]] = {key: [] for key in RECALL_KEYS}
    strategies: dict[str, int] = {}
    for attempt in range(repeat):
        for q in questions:
            result = memory.recall(q.question, k=10)
            t = {k: v * 1000 for k, v in result.timings.items()}
            parts = sum(t.get(k, 0.0) for k in ("embed", "seeds", "ppr", "readout"))
            for key in ("embed", "seeds", "ppr", "readout", "total"):
                samples[key].append(t.get(key, 0.0))
            samples["hits"].append(max(t.get("total", 0.0) - parts, 0.0))
            samples["total_minus_embed"].append(t.get("total", 0.0) - t.get("embed", 0.0))
            if attempt == 0:
                strategies[result.strategy] = strategies.get(result.strategy, 0) + 1
    return samples, strategies


def retrieve_samples(memory: hippo.Memory, questions: Sequence[Question], repeat: int) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {"dense": [], "bm25": []}
    for _ in range(repeat):
        for q in questions:
            for mode in samples:
                start = time.perf_counter()
                memory.retrieve(q.question, k=10, mode=mode)
                samples[mode].append((time.perf_counter() - start) * 1000)
    return samples


def measure_store(url: str, label: str, dataset: Dataset, questions: Sequence[Question], args: argparse.Namespace,
                  overrides: dict[str, Any]) -> dict[str, Any]:
    settings = make_settings(overrides)
    log(f"[{label}] opening {url}")
    with Stopwatch() as load:
        memory = hippo.Memory.open(url, settings=settings)
    run: dict[str, Any] = {"store": label, "url": url, "open_s": load.seconds, "rss_after_open_mb": peak_rss_mb()}
    try:
        if memory.stats().passages:
            log(f"[{label}] store is not empty: indexing timings cover only what it lacks")
        run["index"] = measure_index(memory, dataset, make_extractor(args.extractor, dataset))
        run["graph"] = memory.graph_stats()
        log(f"[{label}] indexed: {run['index']['passages_per_s']:.1f} passages/s, {run['index']['stage_s']}")
        samples, strategies = recall_samples(memory, questions, args.repeat, args.warmup)
        run["recall_ms"] = {k: percentiles(v) for k, v in samples.items()}
        run["strategies"] = strategies
        with igraph_single_thread() as limited:
            if limited:
                samples, _ = recall_samples(memory, questions, args.repeat, args.warmup)
                run["recall_ms_igraph_1_thread"] = {k: percentiles(v) for k, v in samples.items()}
        run["retrieve_ms"] = {k: percentiles(v) for k, v in retrieve_samples(memory, questions, 1).items()}
        run["peak_rss_mb"] = peak_rss_mb()
        log(f"[{label}] recall p50 {run['recall_ms']['total']['p50']:.1f} ms, "
            f"without embedding {run['recall_ms']['total_minus_embed']['p50']:.1f} ms")
    finally:
        memory.close()
    return run


def render(record: dict[str, Any]) -> str:
    parts = [f"# Speed: {record['dataset']}", "",
             f"Machine: {machine_line(record['machine'])}. Extractor: {record['extractor']}; "
             f"{record['n_questions']} questions x {record['repeat']} passes.", "", "## Indexing", ""]
    rows = []
    for run in record["runs"]:
        ix = run["index"]
        rows.append([run["store"], ix["passages"], f"{ix['wall_s']:.1f}", f"{ix['passages_per_s']:.1f}",
                     *(f"{ix['stage_s'][s]:.1f} ({ix['stage_passages_per_s'][s] or 0:.0f}/s)" for s in STAGES),
                     ix["vectors_encoded"], f"{ix['peak_rss_mb']:.0f}"])
    parts.append(markdown_table(["store", "passages", "wall s", "passages/s",
                                 *(f"{s} s (passages/s)" for s in STAGES), "vectors", "peak RSS MB"], rows))
    parts += ["", "## Recall latency (ms)", ""]
    rows = []
    for run in record["runs"]:
        for key in RECALL_KEYS:
            p = run["recall_ms"][key]
            rows.append([run["store"], key, f"{p['p50']:.2f}", f"{p['p95']:.2f}", f"{p['p99']:.2f}",
                         f"{p['mean']:.2f}"])
        for key in ("ppr", "total_minus_embed"):
            p = run.get("recall_ms_igraph_1_thread", {}).get(key)
            if p:
                rows.append([run["store"], f"{key}, igraph OpenMP 1 thread", f"{p['p50']:.2f}", f"{p['p95']:.2f}",
                             f"{p['p99']:.2f}", f"{p['mean']:.2f}"])
        for mode, p in run["retrieve_ms"].items():
            rows.append([run["store"], f"retrieve {mode} (total)", f"{p['p50']:.2f}", f"{p['p95']:.2f}",
                         f"{p['p99']:.2f}", f"{p['mean']:.2f}"])
    parts.append(markdown_table(["store", "stage", "p50", "p95", "p99", "mean"], rows))
    parts += ["", "## Graph and memory", ""]
    parts.append(markdown_table(
        ["store", "vertices", "passages", "entities", "relation edges", "mention edges", "synonym edges",
         "strategies", "open s", "peak RSS MB"],
        [[r["store"], r["graph"]["vertices"], r["graph"]["passages"], r["graph"]["entities"],
          r["graph"].get("relation_edges"), r["graph"].get("mention_edges"), r["graph"].get("synonym_edges"),
          ", ".join(f"{k} {v}" for k, v in sorted(r["strategies"].items())), f"{r['open_s']:.1f}",
          f"{r['peak_rss_mb']:.0f}"] for r in record["runs"]]))
    parts += ["", f"Command: `{record['command']}`"]
    return "\n".join(parts)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", default="hipporag_musique_train100")
    parser.add_argument("--extractor", choices=("spacy", "openie"), default="spacy")
    parser.add_argument("--store", action="append", default=[], metavar="URL",
                        help="store to measure (repeatable): 'sqlite' = fresh temporary file (default), "
                             "a SQLite path, or a neo4j:// URL (should point at an empty database)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--repeat", type=int, default=3, help="passes over the questions")
    parser.add_argument("--warmup", type=int, default=5, help="untimed queries first")
    parser.add_argument("--quick", type=int, metavar="N", help="only the first N questions")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--smoke", action="store_true", help="seconds-long check on hipporag_sample (for CI)")
    args = parser.parse_args(argv)
    if args.smoke:
        args.dataset, args.repeat, args.warmup = "hipporag_sample", 2, 1
        args.out = Path(tempfile.mkdtemp(prefix="hippo-bench-"))
    return args


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    overrides = parse_overrides(args.overrides)
    dataset = load_dataset(args.dataset)
    questions = dataset.questions[: args.quick] if args.quick else dataset.questions
    runs = []
    with tempfile.TemporaryDirectory(prefix="hippo-speed-") as scratch:
        for url in args.store or ["sqlite"]:
            label = "sqlite" if url == "sqlite" else url.split("://", 1)[0] if "://" in url else "sqlite-file"
            path = str(Path(scratch) / "speed.db") if url == "sqlite" else url
            runs.append(measure_store(path, label, dataset, questions, args, overrides))
    record = {
        "dataset": dataset.name, "extractor": args.extractor, "n_questions": len(questions),
        "repeat": args.repeat, "settings_overrides": overrides, "runs": runs, "machine": machine_info(),
        "command": "python benchmarks/speed.py " + " ".join(sys.argv[1:] if argv is None else argv),
    }
    markdown = render(record)
    json_path, md_path = write_outputs(f"speed-{dataset.name}", record, markdown, args.out)
    print(markdown)
    log(f"wrote {json_path} and {md_path}")
    return record


if __name__ == "__main__":
    main()
