"""Scale: the real engine on stores of 10k, 100k and 1M passages, recall end to end.

Each store is built through ``Memory.index`` (the engine's own planning,
extraction interface, embedding cache, synonym linking, SQLite writes and
derived-state updates), from a synthetic corpus of HippoRAG's shape
(``benchmarks.synthetic``: ~12 entity mentions and 10 facts per passage, Zipf
entity reuse, clustered 384-d vectors). Only the text, the triples and the
vectors are synthetic. Stores are kept (``--store-dir``) and reused: a size
is built once.

Each size is then measured in a fresh process, as a user would open it:

- ``open_s``: ``Memory(...)`` on the saved store (derived state loaded, not rebuilt;
  spaCy's pipeline, loaded once per process whatever the store, is not counted);
  ``warm_s``: until the open's read-ahead of the graphs and vector files ended (recall is measured
  after it; ``first_recalls_p50_ms``: the 10 warm-up recalls, taken while it ran);
- recall (``n=5, k=10``) over ``--queries`` questions naming two entities of a
  passage: latency without query embedding, p50/p95 (``recall_*_ms``), CPU
  time (``time.process_time``, less sensitive to the other processes on the
  machine), and by stage (seeds, PPR, read-out); the PPR's work (edges read);
- dense and BM25 retrieval latency, the baselines;
- ``rss_mb``: resident memory after opening and querying, split into the process's own
  (``rss_anon_mb``) and pages of the memory-mapped vector files (``rss_file_mb``: clean page
  cache, dropped under memory pressure);
- ANN recall@10 of each approximate shard against exact search.

Writes ``results/scale.json`` (a list of rows, one per size, each with the
machine and load average), ``results/scale.md`` and ``results/scale.png``.

    python benchmarks/scale.py --sizes 10000 100000 1000000
    python benchmarks/scale.py --smoke
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

try:
    from benchmarks.common import RESULTS, log, machine_info, machine_line, markdown_table, percentiles
    from benchmarks.synthetic import SyntheticCorpus, SyntheticEmbedder, SyntheticExtractor, query_phrases
except ImportError:  # run as ``python benchmarks/scale.py``
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from benchmarks.common import RESULTS, log, machine_info, machine_line, markdown_table, percentiles
    from benchmarks.synthetic import SyntheticCorpus, SyntheticEmbedder, SyntheticExtractor, query_phrases

STORE_DIR = Path("/work/cache/scale") if Path("/work/cache").is_dir() else RESULTS / "scale-stores"
CHUNK = 4_096  # documents per index() call while building
BLOCK = 25  # questions asked with the default threads before they are asked again on one thread
TARGET_MS = {1_000_000: 50.0, 100_000: 15.0}


def _memory(path: Path, **settings: Any):
    import hippo

    memory = hippo.Memory(hippo.store.SQLiteStore(path), settings=hippo.Settings(**settings),
                          embedder=SyntheticEmbedder(), extractor=SyntheticExtractor())
    memory._recaller._phrases = query_phrases  # noqa: SLF001 - spaCy cannot read synthetic names
    return memory


# -- building ----------------------------------------------------------------------


def build(size: int, store_dir: Path, hours: float | None = None) -> dict[str, Any]:
    """Index ``size`` synthetic passages into ``store_dir/scale-<size>.db`` (resuming a partial build).
    ``hours``: start no chunk after this much time (0: build nothing, measure what is there), close the
    store cleanly; the next call resumes (a 1M-passage store takes longer to build than one sitting).
    The record of time spent is written every 10 chunks too, so a sitting ended by a kill keeps it."""
    path = store_dir / f"scale-{size}.db"
    record_path = path.with_suffix(".build.json")
    before = json.loads(record_path.read_text()) if record_path.exists() else {"seconds": 0.0, "chunks": 0}
    if before.get("passages", 0) >= size and path.exists():
        # Built (and calibrated) before: not opened here. The 1M store's state opened in this process
        # stayed ~2.9 GB after closing, page cache the measuring child's files then lacked: its recalls
        # faulted pages in for p50 102 ms, where the child alone recalled at 25.6 ms.
        return before
    memory = _memory(path)
    have = memory.stats().passages
    corpus = SyntheticCorpus(size)
    log(f"{size:,}: building at {path} ({have:,} passages stored)")
    start = time.perf_counter()
    cpu = time.process_time()
    chunks = 0

    def record(done: int) -> dict[str, Any]:
        now = {"seconds": before["seconds"] + time.perf_counter() - start, "chunks": before["chunks"] + chunks,
               "cpu_seconds": before.get("cpu_seconds", 0.0) + time.process_time() - cpu,
               "peak_rss_mb": max(before.get("peak_rss_mb", 0.0), _peak_mb()), "passages": done}
        record_path.write_text(json.dumps(now))
        return now

    done = have
    for first in range(have - have % CHUNK, size, CHUNK):
        if hours is not None and time.perf_counter() - start >= 3600 * hours:
            log(f"  stopping at {done:,} passages after {hours} h; run again to resume")
            break
        memory.index(corpus.documents(first, first + CHUNK))
        chunks += 1
        done = min(first + CHUNK, size)
        if chunks % 10 == 0 or done == size:
            now = record(done)
            log(f"  {done:,} passages, {now['seconds']:.0f}s, peak RSS {_peak_mb():.0f} MB, "
                f"load {os.getloadavg()[0]:.1f}")
    if done >= size:
        for _, index in memory.engine.state.vector_indexes():  # a store built before graphs were calibrated
            index.calibrate()                                  # as they grew
    memory.close()  # folds the journal (and any calibration) into the saved state
    return record(done)


def relink(size: int, store_dir: Path) -> list[str]:
    """``hippo relink`` on a built store (graphs an older hippo saved past ``wide_build_from`` rows with
    fewer than ``wide_links`` links a node, which writes grow as they are); the graphs built, as kind/shard."""
    from hippo.memory.relink import relink as relink_graphs

    memory = _memory(store_dir / f"scale-{size}.db")
    try:
        return [f"{g.kind}/{g.shard}" for g in relink_graphs(memory.engine).graphs]
    finally:
        memory.close()


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# -- measuring (in a fresh process) -------------------------------------------------


def measure(size: int, store_dir: Path, queries: int) -> dict[str, Any]:
    """Open the store and query it; run in its own process so open time and RSS are a user's."""
    from hippo.extract.spacy import load_pipeline

    load_pipeline()  # the query parser's model: loaded once per process, whatever the store
    path = store_dir / f"scale-{size}.db"
    clock = time.perf_counter()
    memory = _memory(path)
    open_s = time.perf_counter() - clock
    outcome = memory.engine.cache.outcome if memory.engine.cache else "no cache"
    corpus = SyntheticCorpus(size)
    rng = np.random.default_rng(size)
    stored = memory.stats().passages  # a build stopped early: ask about the passages it holds
    asked = [corpus.query(int(i)) for i in rng.integers(min(size, stored), size=queries + 10)]
    first = []
    for q in asked[:10]:  # warm-up: first touches of the mapped files, while the open's read-ahead runs
        start = time.perf_counter()
        memory.recall(q)
        first.append((time.perf_counter() - start) * 1000)
    warm_s = _read_ahead_done() - clock
    stages: dict[str, list[float]] = {k: [] for k in ("total", "seeds", "ppr", "readout", "cpu")}
    pushed, alone = [], []
    for block in _blocks(asked[10:]):
        for q in block:
            cpu = time.process_time()
            result = memory.recall(q, n=5, k=10)
            stages["cpu"].append((time.process_time() - cpu) * 1000)
            t = result.timings
            stages["total"].append((t["total"] - t.get("embed", 0.0)) * 1000)
            for key in ("seeds", "ppr", "readout"):
                stages[key].append(t.get(key, 0.0) * 1000)
            pushed.append(result.strategy)
        alone += [_one_thread_ms(memory, q) for q in block]
    baseline = {}
    for mode in ("dense", "bm25"):
        took = []
        for q in asked[10:60]:
            start = time.perf_counter()
            memory.retrieve(q, k=10, mode=mode)
            took.append((time.perf_counter() - start) * 1000)
        baseline[mode] = percentiles(took)
    rss = _rss_parts()
    peak = _peak_mb()
    state = memory.engine.state
    p = state.projection
    row = {
        "passages": p.passage_total, "edges": p.edges.size // 2, "entities": int((~p.is_passage.values).sum()),
        "facts": len(p.fact_ids), "edge_kinds": p.edge_counts(),
        "recall_p50_ms": float(np.percentile(stages["total"], 50)),
        "recall_p95_ms": float(np.percentile(stages["total"], 95)),
        "recall_cpu_p50_ms": float(np.percentile(stages["cpu"], 50)),
        "recall_cpu_p95_ms": float(np.percentile(stages["cpu"], 95)),
        "one_thread_p50_ms": float(np.percentile(alone, 50)), "one_thread_p95_ms": float(np.percentile(alone, 95)),
        "stages_p50_ms": {k: float(np.percentile(v, 50)) for k, v in stages.items()},
        **rss, "peak_rss_mb": peak, "open_s": open_s, "open_outcome": outcome,
        "warm_s": warm_s, "first_recalls_p50_ms": float(np.median(first)),
        "strategies": {s: pushed.count(s) for s in set(pushed)}, "queries": len(asked) - 10,
        "baselines_ms": baseline, "shards": _shards(state),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
    row["ann_recall_at_10"] = ann_recall(state, corpus, rng)
    memory.close()
    return row


def _read_ahead_done() -> float:
    """Wait for the open's read-ahead of the graphs and vector files (``hippo.memory.pages.read_ahead``),
    so recall is measured warm; the clock when it ended. At 1M passages it reads ~14 GB, a minute or
    more after the open returned, and recalls meanwhile compete with it for the disk and a core (the
    1M store's first measurement, taken during it: p50 130 ms against 27 asked again warm)."""
    from hippo.memory.pages import READ_AHEAD

    for thread in threading.enumerate():
        if thread.name == READ_AHEAD:
            thread.join()
    return time.perf_counter()


def measure_real(name: str, path: Path, queries: int) -> dict[str, Any]:
    """Open a real tuning-set store and recall its questions (queries embedded and parsed before:
    CPU time is then recall's own)."""
    import hippo
    from benchmarks.quality import CachedEmbedder
    from hippo.datasets import load_dataset
    from hippo.embed import SentenceEmbedder
    from hippo.extract.spacy import SpacyExtractor, load_pipeline

    load_pipeline()
    dataset = load_dataset(name)
    asked = [q.question.strip() for q in dataset.questions[: queries + 10]]  # as recall reads them
    embedder = CachedEmbedder(SentenceEmbedder(hippo.Settings().embedding_model))
    parser = SpacyExtractor()
    phrases = {q: parser.query_phrases(q) for q in asked}
    for q in asked:
        embedder.encode([q, *phrases[q]])
    clock = time.perf_counter()
    memory = hippo.Memory(hippo.store.SQLiteStore(path), embedder=embedder)
    open_s = time.perf_counter() - clock
    memory._recaller._phrases = phrases.__getitem__  # noqa: SLF001 - parsed above
    outcome = memory.engine.cache.outcome if memory.engine.cache else "no cache"
    for q in asked[:10]:
        memory.recall(q)
    wall, cpu, ppr, alone = [], [], [], []
    for block in _blocks(asked[10:]):
        for q in block:
            start = time.process_time()
            result = memory.recall(q, n=5, k=10)
            cpu.append((time.process_time() - start) * 1000)
            wall.append((result.timings["total"] - result.timings.get("embed", 0.0)) * 1000)
            ppr.append(result.timings.get("ppr", 0.0) * 1000)
        alone += [_one_thread_ms(memory, q) for q in block]
    p = memory.engine.state.projection
    row = {"corpus": name, "passages": p.passage_total, "edges": p.edges.size // 2,
           "recall_p50_ms": float(np.percentile(wall, 50)), "recall_p95_ms": float(np.percentile(wall, 95)),
           "recall_cpu_p50_ms": float(np.percentile(cpu, 50)), "ppr_p50_ms": float(np.percentile(ppr, 50)),
           "one_thread_p50_ms": float(np.percentile(alone, 50)), "one_thread_p95_ms": float(np.percentile(alone, 95)),
           "open_s": open_s, "open_outcome": outcome, **_rss_parts(), "queries": len(wall),
           "load_average": [round(x, 2) for x in os.getloadavg()]}
    memory.close()
    return row


def _blocks(asked: list[str]) -> Iterator[list[str]]:
    """The questions in blocks of ``BLOCK``: each block is asked with the default threads, then again
    on one thread (``_one_thread_ms``), so both see the same host weather; asking each question again
    right after itself slowed the next two-thread recall (2Wiki p50 10.0 -> 10.4 ms, measured)."""
    for start in range(0, len(asked), BLOCK):
        yield asked[start : start + BLOCK]


def _one_thread_ms(memory: Any, query: str) -> float:
    """The same recall with ``recall_threads=1`` (everything on the caller's thread), after its block's
    default ones: the baseline of the recall's threads, in the same run and the same host weather."""
    settings = memory.settings  # the one object the engine and the recaller read
    default, settings.recall_threads = settings.recall_threads, 1
    try:
        t = memory.recall(query, n=5, k=10).timings
    finally:
        settings.recall_threads = default
    return (t["total"] - t.get("embed", 0.0)) * 1000


def _rss_mb() -> float:
    return _resident().get("VmRSS", _peak_mb())


def _resident() -> dict[str, float]:
    """VmRSS and its parts, MB: RssAnon is the process's own memory; RssFile the pages of mapped files
    (the vectors), clean page cache the kernel can drop, mapped whole large folios at a time."""
    found = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key = line.split(":")[0]
        if key in ("VmRSS", "RssAnon", "RssFile"):
            found[key] = int(line.split()[1]) / 1024
    return found


def _rss_parts() -> dict[str, float]:
    found = _resident()
    return {"rss_mb": found.get("VmRSS", _peak_mb()), "rss_anon_mb": found.get("RssAnon", 0.0),
            "rss_file_mb": found.get("RssFile", 0.0)}


def _shards(state: Any) -> dict[str, Any]:
    out = {}
    for kind, index in (("passage", state.passages), ("entity", state.entities), ("fact", state.facts)):
        out[kind] = {str(code): {"kind": shard.kind, "rows": len(shard), "graphs": len(getattr(shard, "graphs", [0])),
                                 "ef": getattr(shard, "ef", None),
                                 "one_ef": getattr(shard, "one_ef", None), "near_ef": getattr(shard, "near_ef", None)}
                     for code, shard in index.shards.items()}
    return out


def _found(index: Any, code: int, queries: np.ndarray, exact: np.ndarray, k: int,
           tolerances: tuple[float, ...] = (1e-6,)) -> list[float]:
    """Per tolerance, the share of the 10 best of a search for k that are among each query's exact top
    10: scored at least the exact 10th less the tolerance (1e-6: ties only; ann-benchmarks' k-nn recall
    allows 1e-3). One search serves every tolerance."""
    got = index.search(queries, k, [code])
    return [float(np.mean([np.mean(scores[:10] >= floor[-1] - tolerance)
                           for (scores, _), floor in zip(got, exact, strict=True)])) for tolerance in tolerances]


def _ten_best(scores: np.ndarray) -> np.ndarray:
    """Each row's 10 best scores, best first: a partition, then a sort of the ten (sorting whole rows of
    a 262,144-row chunk was most of the exact scan at 1M passages)."""
    top = -np.partition(-scores, 9, axis=1)[:, :10]
    return -np.sort(-top, axis=1)


def ann_recall(state: Any, corpus: SyntheticCorpus, rng: np.random.Generator, queries: int = 1_000) -> dict[str, Any]:
    """Recall@10 of every HNSW shard against an exact scan of all its vectors (in chunks): of a search
    for 10 by the questions (``recall``), and of the 10 best of the search recall makes of that kind
    (``recall_at_use``): the questions for facts ``fact_top_k`` x 8 and passages ``passage_prior_top``,
    the questions' phrases for entities (``link_top_k``, counted at 10). 1,000 questions: over 200, two
    draws of the same graph differed by up to 0.014."""
    import hippo

    settings = hippo.Settings()
    wide = {"passage": max(settings.passage_prior_top, 10), "fact": max(settings.fact_top_k * 8, 10), "entity": 10}
    embedder = SyntheticEmbedder()
    questions = [corpus.query(int(i)) for i in rng.integers(corpus.passages, size=queries)]
    asked = embedder.encode(questions)
    phrases = embedder.encode([p for q in questions for p in query_phrases(q)])
    found = {}
    for kind, index in (("passage", state.passages), ("entity", state.entities), ("fact", state.facts)):
        for code, shard in index.shards.items():
            if shard.kind != "hnsw":
                continue
            labels = shard.labels()
            sets = [asked, phrases] if kind == "entity" else [asked]  # the questions' exact top 10 once
            best = [np.full((len(q), 10), -np.inf, dtype=np.float32) for q in sets]
            for start in range(0, len(labels), 262_144):
                part = index.vectors_of(labels[start : start + 262_144])
                best = [_ten_best(np.concatenate([b, q @ part.T], axis=1)) for b, q in zip(best, sets, strict=True)]
            strict, within = _found(index, code, asked, best[0], 10, (1e-6, 1e-3))
            row = found[f"{kind}/{code}"] = {
                "rows": len(labels), "graphs": len(getattr(shard, "graphs", [shard])), "ef": shard.ef, "recall": strict,
                "recall_at_use": _found(index, code, sets[-1], best[-1], wide[kind])[0], "k_at_use": wide[kind],
                "queries_at_use": "phrases" if kind == "entity" else "questions", "recall_within_1e-3": within}
            if kind == "entity":  # recall links a phrase to its best one alone, a search walked at ``one_ef``
                got = index.search(phrases, 1, [code])
                row["best_one_at_use"] = float(np.mean([len(scores) > 0 and scores[0] >= exact[0] - 1e-6
                                                        for (scores, _), exact in zip(got, best[-1], strict=True)]))
                row["one_ef"] = shard.one_ef
            log(f"  ANN recall@10 {kind} shard {code} ({len(labels):,} rows, ef {shard.ef}): {row['recall']:.3f}"
                f" (as recall searches it, {row['queries_at_use']} for {wide[kind]}: {row['recall_at_use']:.3f};"
                f" within 1e-3 of the 10th: {row['recall_within_1e-3']:.3f})")
    return found


# -- report ------------------------------------------------------------------------


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    rows = [r for r in rows if "corpus" not in r]
    if not rows:
        return
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = [r["passages"] for r in rows]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.4))
    left.plot(sizes, [r["recall_p50_ms"] for r in rows], "o-", label="recall p50 (excl. query embedding)")
    left.plot(sizes, [r["recall_p95_ms"] for r in rows], "o--", label="recall p95")
    left.plot(sizes, [r["recall_cpu_p50_ms"] for r in rows], "s:", label="recall CPU time p50")
    for stage, style in (("seeds", "^-."), ("ppr", "v-.")):
        left.plot(sizes, [r["stages_p50_ms"][stage] for r in rows], style, alpha=0.7, label=f"{stage} p50")
    left.plot(sizes, [r["baselines_ms"]["dense"]["p50"] for r in rows], "x:", label="dense retrieve p50")
    for size, target in TARGET_MS.items():
        left.axhline(target, color="grey", linestyle=":", linewidth=0.8)
        left.annotate(f"target at {size:,}", (sizes[0], target), fontsize=7, color="grey")
    left.set(xscale="log", xlabel="passages", ylabel="ms per recall", title="Recall cost vs corpus size")
    left.grid(True, which="both", alpha=0.3)
    left.legend(fontsize=7)
    right.plot(sizes, [r["rss_mb"] / 1024 for r in rows], "o-", label="RSS after queries (GB)")
    right.plot(sizes, [r.get("rss_anon_mb", r["rss_mb"]) / 1024 for r in rows], "o:",
               label="own memory (GB, without mapped vector files)")
    right.plot(sizes, [r["open_s"] for r in rows], "s-", label="open (s)")
    right.set(xscale="log", xlabel="passages", title="Memory and open time")
    right.grid(True, which="both", alpha=0.3)
    right.legend(fontsize=8)
    for r in rows:
        right.annotate(f"{r['edges'] / 1e6:.1f}M edges", (r["passages"], r["open_s"]), fontsize=7,
                       xytext=(4, 4), textcoords="offset points")
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def _rss_cell(row: dict[str, Any]) -> str:
    if "rss_anon_mb" not in row:  # rows of earlier runs
        return f"{row['rss_mb']:,.0f}"
    return f"{row['rss_mb']:,.0f} ({row['rss_anon_mb']:,.0f} + {row['rss_file_mb']:,.0f})"


def _alone_cell(row: dict[str, Any]) -> str:
    if "one_thread_p50_ms" not in row:  # rows of earlier runs
        return "–"
    return f"{row['one_thread_p50_ms']:.1f} / {row['one_thread_p95_ms']:.1f}"


def _ann_cell(shard: str, found: dict[str, Any]) -> str:
    graphs = f" in {found['graphs']} graphs, the widest" if found.get("graphs", 1) > 1 else ""
    cell = f"{shard}{graphs}" + (f" ef {found['ef']}" if "ef" in found else "") + f": {found['recall']:.3f}"
    if "recall_at_use" in found:
        cell += f" ({found['recall_at_use']:.3f} {found.get('queries_at_use', 'questions')} at k {found['k_at_use']})"
    if "recall_within_1e-3" in found:
        cell += f", {found['recall_within_1e-3']:.3f} within 1e-3"
    if "best_one_at_use" in found:
        cell += f"; the best one of each phrase at ef {found['one_ef']}: {found['best_one_at_use']:.3f}"
    return cell


def _open_cell(r: dict[str, Any]) -> str:
    if "warm_s" not in r:  # a row measured before the read-ahead was waited for
        return f"{r['open_s']:.1f}"
    return f"{r['open_s']:.1f} / {r['warm_s']:.0f} ({r['first_recalls_p50_ms']:.0f} ms)"


def render(rows: list[dict[str, Any]], command: str) -> str:
    synthetic, real = [r for r in rows if "corpus" not in r], [r for r in rows if "corpus" in r]
    table = [[f"{r['passages']:,}", f"{r['edges']:,}", f"{r['facts']:,}", f"{r['build_s'] / 3600:.2f} h"
              if r.get("build_s") else "–", _open_cell(r), f"{r['recall_p50_ms']:.1f}",
              f"{r['recall_p95_ms']:.1f}", _alone_cell(r), f"{r['recall_cpu_p50_ms']:.1f}",
              f"{r['stages_p50_ms']['seeds']:.1f} / {r['stages_p50_ms']['ppr']:.1f} / "
              f"{r['stages_p50_ms']['readout']:.1f}", f"{r['baselines_ms']['dense']['p50']:.1f} / "
              f"{r['baselines_ms']['bm25']['p50']:.1f}", _rss_cell(r),
              ", ".join(_ann_cell(k, v) for k, v in r["ann_recall_at_10"].items()) or "exact",
              ", ".join(f"{x:.1f}" for x in r["load_average"])] for r in synthetic]
    parts = ["# Scale: the engine end to end", "", f"Machine: {machine_line(rows[-1]['machine'])}.", ""]
    if synthetic:
        parts += ["Synthetic stores (`benchmarks/synthetic.py`), built through `Memory.index`:", "",
                  markdown_table(["passages", "edges", "facts", "build", "open s / warm s (first recalls p50)",
                                  "recall p50 ms", "p95 ms",
                                  "one thread p50 / p95", "CPU p50 ms", "seeds / PPR / read-out p50",
                                  "dense / BM25 p50", "RSS MB (own + mapped)", "ANN recall@10", "load avg"], table), "",
                  "Warm: until the open's read-ahead of the graphs and vector files ended (the first 10 recalls "
                  "ran meanwhile; their p50 in brackets); the recalls measured after it. "
                  "Recall latency excludes query embedding; the CPU time is that of the whole recall call. One "
                  f"thread: each block of {BLOCK} questions asked again with `recall_threads=1` (searches, BM25 "
                  "and the seed names on the caller's thread alone). ANN "
                  "recall@10: of a search for 10 by the questions, and in brackets of the search recall makes of "
                  "that shard (its queries, its k); then of the search for 10, counting a hit scored within 1e-3 "
                  "of the exact 10th as found (ann-benchmarks' k-nn recall: are the misses near-ties?); for "
                  "entities, the share of the questions' phrases whose search for one (an entity link, walked at "
                  "`one_ef`) finds the exact best.", "",
                  "![recall cost vs size](scale.png)", ""]
    if real:
        parts += ["Real tuning sets (MiniLM, spaCy graph), their saved stores:", "",
                  markdown_table(["corpus", "passages", "edges", "open s", "recall p50 ms", "p95 ms",
                                  "one thread p50 / p95", "CPU p50 ms", "PPR p50 ms", "RSS MB (own + mapped)",
                                  "load avg"],
                                 [[r["corpus"], f"{r['passages']:,}", f"{r['edges']:,}", f"{r['open_s']:.2f}",
                                   f"{r['recall_p50_ms']:.1f}", f"{r['recall_p95_ms']:.1f}", _alone_cell(r),
                                   f"{r['recall_cpu_p50_ms']:.1f}", f"{r['ppr_p50_ms']:.1f}", _rss_cell(r),
                                   ", ".join(f"{x:.1f}" for x in r["load_average"])] for r in real]), ""]
    parts.append(f"Command: `{command}`")
    return "\n".join(parts)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--store-dir", type=Path, default=STORE_DIR)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--build-only", action="store_true", help="build (or finish) the stores, measure nothing")
    parser.add_argument("--build-hours", type=float, help="start no chunk of a store's build after this long "
                        "(0: measure a partial store as it stands); a later run resumes it")
    parser.add_argument("--relink", action="store_true", help="first build again whole each graph of a built "
                        "store linked as today's settings do not link one of its size (a store built by an "
                        "older hippo, whose writes grow its graphs as they are)")
    parser.add_argument("--real", action="append", default=[], metavar="DATASET=STORE",
                        help="also measure a real tuning set's saved store (open, recall of its questions)")
    parser.add_argument("--measure-one", type=int, help=argparse.SUPPRESS)  # the child process
    parser.add_argument("--measure-real", help=argparse.SUPPRESS)
    parser.add_argument("--smoke", action="store_true", help="seconds-long check on a tiny store (for CI)")
    args = parser.parse_args(argv)
    if args.smoke:
        args.sizes, args.queries = [300], 20
        scratch = Path(tempfile.mkdtemp(prefix="hippo-bench-"))
        args.store_dir, args.out = scratch, scratch
        os.environ.setdefault("HIPPO_VECTOR_EXACT_MAX", "1000")  # graphs at this size too: ANN recall is measured
    return args


def _child(arguments: list[str]) -> dict[str, Any]:
    """Run one measurement in a fresh process (open time and RSS as a user would see them)."""
    child = subprocess.run([sys.executable, __file__, *arguments], capture_output=True, text=True, check=False,
                           env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)})
    if child.returncode:
        raise SystemExit(f"measuring {arguments} failed:\n{child.stderr[-3000:]}")
    sys.stderr.write("".join(line for line in child.stderr.splitlines(True) if "WARNING clustering" not in line))
    return json.loads(child.stdout.strip().splitlines()[-1])


def main(argv: Sequence[str] | None = None) -> list[dict[str, Any]]:
    args = parse_args(argv)
    args.store_dir.mkdir(parents=True, exist_ok=True)
    if args.measure_one:
        print(json.dumps(measure(args.measure_one, args.store_dir, args.queries)))
        return []
    if args.measure_real:
        name, _, path = args.measure_real.partition("=")
        print(json.dumps(measure_real(name, Path(path), args.queries)))
        return []
    rows = []
    for size in sorted(args.sizes):
        record = build(size, args.store_dir, args.build_hours)
        if args.relink:
            log(f"{size:,}: graphs linked again whole: {relink(size, args.store_dir) or 'none'}")
        if args.build_only:
            continue
        if record["passages"] < size:  # measured as it stands: a point on the curve ("passages" says which)
            log(f"{size:,}: {record['passages']:,} passages built so far")
        log(f"{size:,}: measuring in a fresh process")
        row = _child(["--measure-one", str(size), "--store-dir", str(args.store_dir), "--queries", str(args.queries)])
        row.update(build_s=record["seconds"], build_cpu_s=record.get("cpu_seconds"),
                   build_peak_rss_mb=record.get("peak_rss_mb"), machine=machine_info())
        rows.append(row)
        log(f"{size:,}: recall p50 {row['recall_p50_ms']:.1f} ms, p95 {row['recall_p95_ms']:.1f} ms, "
            f"CPU p50 {row['recall_cpu_p50_ms']:.1f} ms, open {row['open_s']:.1f}s, RSS {row['rss_mb']:.0f} MB")
    for real in args.real:
        log(f"{real}: measuring in a fresh process")
        row = _child(["--measure-real", real, "--queries", str(args.queries)])
        row["machine"] = machine_info()
        rows.append(row)
        log(f"{row['corpus']}: recall p50 {row['recall_p50_ms']:.1f} ms, CPU p50 {row['recall_cpu_p50_ms']:.1f} ms, "
            f"open {row['open_s']:.2f}s ({row['open_outcome']})")
    if not rows:
        return rows
    command = "python benchmarks/scale.py " + " ".join(sys.argv[1:] if argv is None else argv)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "scale.json").write_text(json.dumps(rows, indent=2) + "\n")
    markdown = render(rows, command)
    (args.out / "scale.md").write_text(markdown + "\n")
    plot(rows, args.out / "scale.png")
    print(markdown)
    log(f"wrote {args.out / 'scale.json'}, scale.md and scale.png")
    return rows


if __name__ == "__main__":
    main()
