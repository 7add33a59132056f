"""Encoders compared in one run: torch, ONNX fp32 and ONNX int8 (``hippo.embed``), for speed and for recall.

``--part speed`` (on MuSiQue train100's corpus and questions):

- encoder throughput: strings/s on passages and on short strings (entity
  names, fact texts), each backend in turn on the same chunk, interleaved
  over ``--rounds`` rounds so a change of machine load hits all alike; plus
  each backend's cosine to torch's vectors;
- query embedding latency p50/p95, one question at a time, interleaved per
  question, at all cores and at one thread (the server's setting);
- end-to-end indexing passages/s into a fresh SQLite store per backend (spaCy
  extraction), with the strings requested and the vectors encoded;
- ``recall`` latency p50/p95 on those stores;
- ``hippo serve --http`` req/s at 1 and 8 clients on those stores
  (``benchmarks/serve_load.py``'s machinery), one server per backend.

``--part quality``: Recall@2/5 of ``recall`` and of dense ``retrieve`` per
backend on MuSiQue train100, HotpotQA train100 and 2Wiki tune500, each on
an index built with that backend (``results/cache``; the torch arm reuses
the shared caches, which were all built by torch, and is skipped where one
is missing or incomplete: it is never written).

Load averages are recorded with every part; on a shared machine compare the
backends within a run, not across runs.

    python benchmarks/embed.py                 # both parts
    python benchmarks/embed.py --part speed --index-documents 600
    python benchmarks/embed.py --smoke         # seconds: sample corpus, a temporary folder
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

try:
    from benchmarks.common import (CACHE, RESULTS, Stopwatch, log, machine_info, machine_line, make_settings,
                                   markdown_table, offline, percentiles, write_outputs)
except ImportError:  # run as ``python benchmarks/embed.py``
    from common import (CACHE, RESULTS, Stopwatch, log, machine_info, machine_line, make_settings,  # type: ignore
                        markdown_table, offline, percentiles, write_outputs)

offline()

import numpy as np  # noqa: E402

import hippo  # noqa: E402
from hippo.datasets import Dataset, load_dataset  # noqa: E402
from hippo.embed import BACKENDS, Embedder, open_embedder  # noqa: E402
from hippo.extract import SpacyExtractor  # noqa: E402

BACKEND_ORDER = ("torch", "onnx", "onnx-int8")
assert set(BACKEND_ORDER) == set(BACKENDS)
QUALITY_SETS = ("hipporag_musique_train100", "hipporag_hotpotqa_train100", "hipporag_2wiki_tune500")


def load_now() -> float:
    return round(os.getloadavg()[0], 2)


# -- speed -------------------------------------------------------------------------------


def encoders(threads: int | None = None) -> dict[str, Embedder]:
    return {b: open_embedder(make_settings({"embedding_backend": b}), threads=threads) for b in BACKEND_ORDER}


def short_strings(dataset: Dataset, limit: int) -> list[str]:
    """Entity names and fact-like texts as indexing encodes them: spaCy's, from the first passages."""
    from hippo.memory.indexing import split_documents, validate_documents

    settings = hippo.Settings()
    _, passages = split_documents(validate_documents(dataset.documents[:60], settings), settings)
    strings: dict[str, None] = {}
    for extraction in SpacyExtractor().extract(passages):
        strings.update(dict.fromkeys(e.name.lower() for e in extraction.entities))
        strings.update(dict.fromkeys(f"{t.subject} {t.predicate} {t.object}" for t in extraction.triples))
    return list(strings)[:limit]


def throughput(models: dict[str, Embedder], texts: list[str], rounds: int) -> dict[str, Any]:
    """strings/s per backend, the backends interleaved round by round on the same slice."""
    seconds = dict.fromkeys(models, 0.0)
    loads = []
    slices = np.array_split(np.arange(len(texts)), rounds)
    for part in slices:
        chunk = [texts[i] for i in part]
        loads.append(load_now())
        for name, model in models.items():
            clock = time.perf_counter()
            model.encode(chunk)
            seconds[name] += time.perf_counter() - clock
    vectors = {name: model.encode(texts) for name, model in models.items()}
    cosines = {name: (v * vectors["torch"]).sum(axis=1) for name, v in vectors.items()}
    return {name: {"strings": len(texts), "seconds": round(seconds[name], 3),
                   "strings_per_s": round(len(texts) / seconds[name], 1),
                   "cosine_to_torch_mean": round(float(cosines[name].mean()), 5),
                   "cosine_to_torch_min": round(float(cosines[name].min()), 5)}
            for name in models} | {"load_average": loads}


def query_latency(models: dict[str, Embedder], questions: list[str]) -> dict[str, Any]:
    samples: dict[str, list[float]] = {name: [] for name in models}
    for model in models.values():
        model.encode(questions[:3])  # warm-up
    for question in questions:
        for name, model in models.items():
            clock = time.perf_counter()
            model.encode([question])
            samples[name].append((time.perf_counter() - clock) * 1000)
    return {name: {k: round(v, 2) for k, v in percentiles(s, (50, 95)).items()} for name, s in samples.items()}


class CountingEmbedder:
    """Counts the strings indexing asks for and the ones that reach the model."""

    def __init__(self, inner: Embedder) -> None:
        self.inner, self.name, self.dim = inner, inner.name, inner.dim
        self.backend = getattr(inner, "backend", "torch")
        self.requested = self.calls = 0

    def encode(self, texts: list[str]) -> np.ndarray:
        self.requested += len(texts)
        self.calls += 1
        return self.inner.encode(texts)


def _all_cores_for_torch() -> int:
    import torch

    torch.set_num_threads(os.cpu_count() or 1)
    return torch.get_num_threads()


def index_and_recall(backend: str, model: Embedder, dataset: Dataset, documents: list[Any], questions: list[str],
                     path: Path) -> dict[str, Any]:
    counting = CountingEmbedder(model)
    settings = make_settings({"embedding_backend": backend})
    load_before = load_now()
    with hippo.Memory.open(str(path), settings=settings, embedder=counting) as memory:
        with Stopwatch() as watch:
            result = memory.index(documents)
        load_after = load_now()
        recall_ms, embed_ms = [], []
        for q in questions[:3]:
            memory.recall(q)
        for q in questions:
            timings = memory.recall(q).timings
            recall_ms.append(timings["total"] * 1000)
            embed_ms.append(timings.get("embed", 0.0) * 1000)
    return {"passages": result.passages_added, "seconds": round(watch.seconds, 2),
            "passages_per_s": round(result.passages_added / watch.seconds, 2),
            "stage_s": {k: round(v, 2) for k, v in result.timings.items()},
            "strings_requested": counting.requested, "vectors_encoded": result.vectors_encoded,
            "load_average": [load_before, load_after],
            "recall_ms": {k: round(v, 2) for k, v in percentiles(recall_ms, (50, 95)).items()},
            "recall_embed_ms": {k: round(v, 2) for k, v in percentiles(embed_ms, (50, 95)).items()}}


def serve(backend: str, store: Path, questions: list[str], levels: Sequence[int], requests: int,
          max_seconds: float) -> dict[str, Any]:
    try:
        from benchmarks import serve_load
    except ImportError:
        import serve_load  # type: ignore

    load_before = load_now()
    run = serve_load.measure(backend, str(store), {"HIPPO_EMBEDDING_BACKEND": backend}, questions, levels,
                             dict.fromkeys(levels, requests), max_seconds)
    run["load_average"] = [load_before, load_now()]
    return run


def _checkpoint(args: argparse.Namespace, record: dict[str, Any]) -> None:
    """The speed record so far, as JSON: a long run stopped early keeps what it measured."""
    import json

    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "embed-speed.partial.json").write_text(json.dumps(record, indent=2, default=str) + "\n")


def speed_part(args: argparse.Namespace, scratch: Path) -> dict[str, Any]:
    dataset = load_dataset(args.dataset)
    questions = [q.question for q in dataset.questions]
    documents = dataset.documents[: args.index_documents] if args.index_documents else dataset.documents
    models = encoders()
    passages = [f"{d.title}\n{d.text}" if d.title else d.text for d in dataset.documents[: args.strings]]
    log(f"throughput on {len(passages)} passages, {args.rounds} interleaved rounds")
    record: dict[str, Any] = {"dataset": dataset.name, "passage_throughput": throughput(models, passages, args.rounds)}
    shorts = short_strings(dataset, args.strings * 4)
    record["short_throughput"] = throughput(models, shorts, args.rounds)
    record["query_ms_all_cores"] = query_latency(models, questions)
    record["query_ms_1_thread"] = query_latency(encoders(threads=1), questions)
    # open_embedder(threads=1) set torch's thread count for the whole process (the server's setting);
    # the indexing arms below get every core back, as ``hippo index`` does. Until 2026-12-02 they did
    # not, and torch indexed on one thread: its passages/s were understated by ~2.3x.
    record["torch_threads_indexing"] = _all_cores_for_torch()
    record["index"], record["serve"] = {}, {}
    _checkpoint(args, record)
    for backend, model in models.items():
        log(f"[{backend}] indexing {len(documents)} documents")
        path = scratch / f"speed-{backend}.db"
        record["index"][backend] = index_and_recall(backend, model, dataset, documents, questions, path)
        log(f"[{backend}] {record['index'][backend]}")
        _checkpoint(args, record)
    del models
    for backend in BACKEND_ORDER:
        record["serve"][backend] = serve(backend, scratch / f"speed-{backend}.db", questions, args.levels,
                                         args.requests, args.max_seconds)
        _checkpoint(args, record)
    record["machine"] = machine_info()
    return record


def render_speed(r: dict[str, Any]) -> str:
    torch_ix = r["index"]["torch"]["passages_per_s"]
    torch_rps = {lv["clients"]: lv["throughput_rps"] for lv in r["serve"]["torch"]["levels"]}
    rows = []
    for b in BACKEND_ORDER:
        ix = r["index"][b]
        levels = {lv["clients"]: lv["throughput_rps"] for lv in r["serve"][b]["levels"]}
        top = max(levels)
        passages = r["passage_throughput"][b]
        rows.append([b, passages["strings_per_s"], r["short_throughput"][b]["strings_per_s"],
                     f"{passages['cosine_to_torch_mean']:.4f}", f"{passages['cosine_to_torch_min']:.4f}",
                     f"{ix['passages_per_s']:.1f} ({ix['passages_per_s'] / torch_ix:.2f}x)",
                     f"{ix['stage_s'].get('embed', 0):.1f} / {ix['stage_s'].get('embed_overlapped', 0):.1f}",
                     f"{ix['strings_requested']} / {ix['vectors_encoded']}",
                     f"{r['query_ms_all_cores'][b]['p50']:.1f} / {r['query_ms_all_cores'][b]['p95']:.1f}",
                     f"{r['query_ms_1_thread'][b]['p50']:.1f} / {r['query_ms_1_thread'][b]['p95']:.1f}",
                     f"{ix['recall_ms']['p50']:.1f} / {ix['recall_ms']['p95']:.1f}",
                     f"{levels[top]:.1f} ({levels[top] / torch_rps[top]:.2f}x)", ix["load_average"]])
    n = r["index"]["torch"]["passages"]
    return "\n".join([
        f"## Speed: {r['dataset']}", "",
        f"Throughput on {r['passage_throughput']['torch']['strings']} passages and "
        f"{r['short_throughput']['torch']['strings']} short strings (entity names, fact texts), backends "
        f"interleaved; indexing {n} passages into a fresh SQLite store each (spaCy extraction); recall and "
        f"queries over the dataset's questions; server: `hippo serve --http` over each index, "
        f"{max(torch_rps)} clients, memory/recall n=5 k=10.", "",
        markdown_table(["backend", "passages/s (encode)", "short strings/s", "cos to torch (mean)", "cos (min)",
                        "indexing passages/s (vs torch)", "embed s: after extraction / beside it",
                        "strings asked / encoded",
                        "query ms p50/p95", "query ms 1 thread", "recall ms p50/p95",
                        f"server req/s, {max(torch_rps)} clients (vs torch)", "load before/after index"], rows),
        "", f"Machine: {machine_line(r['machine'])}",
    ])


# -- quality -----------------------------------------------------------------------------


def quality_part(args: argparse.Namespace) -> dict[str, Any]:
    try:
        from benchmarks import quality
    except ImportError:
        import quality  # type: ignore

    record: dict[str, Any] = {"sets": {}, "load_average": []}
    for name in args.sets:
        dataset = load_dataset(name)
        record["sets"][dataset.name] = {}
        for backend in reversed(BACKEND_ORDER):  # torch last: its shared cache may still be being built
            settings = make_settings({"embedding_backend": backend})
            path = quality.cache_path(dataset.name, "spacy", settings, args.cache_dir)
            if backend == "onnx":  # its own index here, though its vectors could share torch's caches
                path = path.with_name(f"{path.stem}-onnx.db")
            complete = path.exists() and _stored_passages(path) == quality.expected_passages(dataset, settings)
            if backend == "torch" and not complete and not args.smoke:
                log(f"[{dataset.name}] no complete torch cache at {path}: torch arm skipped (never built here)")
                continue
            record["load_average"].append(load_now())
            embedder = quality.CachedEmbedder(open_embedder(settings))
            memory, info = quality.open_indexed(dataset, "spacy", settings, embedder, path)
            with memory:
                rank, strategy = quality.graph_ranker(memory)
                graph = quality.evaluate("recall", "spacy", dataset, dataset.questions, rank, strategy)
                dense = quality.evaluate("dense", "-", dataset, dataset.questions,
                                         lambda q, m=memory: m.retrieve(q, k=quality.HITS, mode="dense"))
            record["sets"][dataset.name][backend] = {
                "index": {"path": info.path, "reused": info.reused, "seconds": round(info.seconds, 1),
                          "embed_s": round(info.timings.get("embed", 0.0), 1), "passages": info.stats.get("passages")},
                "recall": {f"R@{k}": round(graph.recall[k], 2) for k in (2, 5)},
                "dense": {f"R@{k}": round(dense.recall[k], 2) for k in (2, 5)}}
            log(f"[{dataset.name}] {backend}: {record['sets'][dataset.name][backend]}")
            record["machine"] = machine_info()
            if args.part == "quality":  # arm by arm: a long run stopped early keeps what it measured
                write_outputs("embed-quality", record, render_quality(record), args.out)
    return record


def _stored_passages(path: Path) -> int:
    import sqlite3

    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        try:
            return int(db.execute("SELECT COUNT(*) FROM passages WHERE forgotten_at IS NULL").fetchone()[0])
        except sqlite3.Error:
            return -1


def render_quality(r: dict[str, Any]) -> str:
    rows = []
    for name, arms in r["sets"].items():
        reference = arms.get("torch") or arms.get("onnx")  # fp32 ONNX equals torch's vectors (cosine 1.0)
        for backend in BACKEND_ORDER:
            if backend not in arms:
                rows.append([name, backend, "–", "–", "–", "–", "–", "not measured (no complete torch cache)" if backend == "torch" else "not measured"])
                continue
            a = arms[backend]
            delta = f"{a['recall']['R@5'] - reference['recall']['R@5']:+.1f}" if reference else "–"
            rows.append([name, backend, a["recall"]["R@2"], a["recall"]["R@5"], delta, a["dense"]["R@2"],
                         a["dense"]["R@5"], f"{'reused' if a['index']['reused'] else 'built'}, embed "
                                            f"{a['index']['embed_s']:.0f} s"])
    return "\n".join([
        "## Quality: Recall@k of gold documents (percent), each backend on its own index", "",
        markdown_table(["set", "backend", "recall R@2", "recall R@5", "R@5 vs torch", "dense R@2", "dense R@5",
                        "index"], rows),
        "", f"Load average at each arm: {r['load_average']}. Machine: {machine_line(r['machine'])}",
    ])


# -- main ----------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--part", choices=("speed", "quality", "both"), default="both")
    parser.add_argument("--dataset", default="hipporag_musique_train100", help="the speed part's dataset")
    parser.add_argument("--sets", nargs="+", default=list(QUALITY_SETS), help="the quality part's datasets")
    parser.add_argument("--strings", type=int, default=400, help="passages in the throughput test (x4 short)")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--index-documents", type=int, default=None, help="index only the first N documents")
    parser.add_argument("--levels", type=int, nargs="+", default=[1, 8], help="server client counts")
    parser.add_argument("--requests", type=int, default=160, help="recalls per server level")
    parser.add_argument("--max-seconds", type=float, default=40.0)
    parser.add_argument("--cache-dir", type=Path, default=CACHE)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--smoke", action="store_true", help="seconds-long check on the sample corpus (for CI)")
    args = parser.parse_args(argv)
    if args.smoke:
        scratch = Path(tempfile.mkdtemp(prefix="hippo-bench-"))
        args.dataset, args.sets, args.strings, args.rounds = "hipporag_sample", ["hipporag_sample"], 8, 2
        args.index_documents, args.levels, args.requests, args.max_seconds = 4, [1], 4, 20.0
        args.cache_dir, args.out = scratch / "cache", scratch
    return args


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    record: dict[str, Any] = {"command": "python benchmarks/embed.py " + " ".join(sys.argv[1:] if argv is None
                                                                                 else argv)}
    parts = []
    with tempfile.TemporaryDirectory(prefix="hippo-embed-") as scratch:
        if args.part in ("speed", "both"):
            record["speed"] = speed_part(args, Path(scratch))
            parts.append(render_speed(record["speed"]))
        if args.part in ("quality", "both"):
            record["quality"] = quality_part(args)
            parts.append(render_quality(record["quality"]))
    stem = "embed" if args.part == "both" else f"embed-{args.part}"
    markdown = "\n\n".join(["# Encoders: torch, ONNX fp32, ONNX int8", *parts, f"Command: `{record['command']}`"])
    json_path, md_path = write_outputs(stem, record, markdown, args.out)
    print(markdown)
    log(f"wrote {json_path} and {md_path}")
    return record


if __name__ == "__main__":
    main()
