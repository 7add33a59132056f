"""Retrieval quality: Recall@1/2/5/10 of gold documents, hippo recall against baselines.

For one dataset (a folder name under ``$HIPPO_DATASETS`` or a path) and each
extractor (spaCy, and HippoRAG's GPT-3.5 OpenIE triples when the dataset ships
them) it measures, on the same index and the same embedder:

- ``dense``, ``bm25``, ``hybrid``: ``Memory.retrieve`` modes (no graph);
- ``hippo``: ``Memory.recall`` (seeds -> Personalized PageRank -> read-out);
- with ``--ablation``: ``recall`` under settings variants, reusing the index.

Recall@k is the share of a question's gold documents among the first k
distinct documents of 10 hits, averaged over questions; a per-question-type
breakdown (MuSiQue hop count, HotpotQA bridge/comparison) is given at R@5.

The index is a SQLite file under ``results/cache/`` named after the dataset,
extractor and embedding model; a rerun that finds it complete skips indexing,
so only the queries run (seconds).

    python benchmarks/quality.py --dataset hipporag_musique_train100 --extractor both --ablation
    python benchmarks/quality.py --smoke
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sqlite3
import sys
import tempfile
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

try:
    from benchmarks.common import (
        CACHE,
        RESULTS,
        Stopwatch,
        igraph_single_thread,
        log,
        machine_info,
        machine_line,
        make_settings,
        markdown_table,
        offline,
        parse_overrides,
        progress_printer,
        write_outputs,
    )
except ImportError:  # run as ``python benchmarks/quality.py``
    from common import (  # type: ignore
        CACHE,
        RESULTS,
        Stopwatch,
        igraph_single_thread,
        log,
        machine_info,
        machine_line,
        make_settings,
        markdown_table,
        offline,
        parse_overrides,
        progress_printer,
        write_outputs,
    )

offline()

import hippo
from hippo.datasets import Dataset, Question, load_dataset
from hippo.embed import Embedder, backend_of, open_embedder
from hippo.evaluation import recall_at
from hippo.extract import Extractor, OpenIEImport, SpacyExtractor
from hippo.ids import text_hash
from hippo.memory.engine import Memory
from hippo.memory.indexing import split_documents, validate_documents
from hippo.store import SQLiteStore
from hippo.store.base import vector_family
from hippo.store.sqlite_embedding import stored_format, unblob

# The tuning sets, reported together: a change that gains on one and loses on another shows at once.
SETS = {"hipporag_musique_train100": "MuSiQue", "hipporag_hotpotqa_train100": "HotpotQA",
        "hipporag_2wiki_tune500": "2Wiki"}
KS = (1, 2, 5, 10)
HITS = 10
BASELINES = ("dense", "bm25", "hybrid")
# Settings that change what indexing writes: a cache built under other values is another cache.
INDEX_SETTINGS = ("synonym_threshold", "synonym_max_neighbors", "passage_chars", "embedding_model",
                  "embedding_backend")
# Extractors whose output changed since their caches were built: the cache name says which revision.
# openie: paragraphs longer than passage_chars are matched chunk by chunk (issue 14), not sent to spaCy.
EXTRACTOR_REVISION = {"openie": "openie-chunked"}

# Recall@5 of a plain reference implementation on this machine (MiniLM, spaCy, no LLM filter), issue 4.
REFERENCE_R5: dict[str, dict[str, str]] = {
    "hipporag_musique_train100": {"dense": "62.2", "bm25": "50.9", "fact seeds": "63.1",
                                  "entity seeds": "67.2", "openie graph": "65.6–68.2"},
    "hipporag_hotpotqa_train100": {"dense": "78.5", "bm25": "76.0", "fact seeds": "74.0",
                                   "entity seeds": "83.0"},
}

# name -> overrides. The defaults are picked from these rows, so each varies one thing.
ABLATION: dict[str, dict[str, Any]] = {
    # Issue 14's levers, each taken out alone; the first row is recall as it was before them.
    "levers off (title seeds 0, no bridge)": {"title_weight": 0.0, "bridge_weight": 0.0},
    "no title seeds": {"title_weight": 0.0},
    "no bridge hop": {"bridge_weight": 0.0},
    "title_weight 0.5": {"title_weight": 0.5},
    "title_weight 2.0": {"title_weight": 2.0},
    "bridge_weight 0.5": {"bridge_weight": 0.5},
    "bridge_weight 2.0": {"bridge_weight": 2.0},
    "bridge_passages 1": {"bridge_passages": 1},
    "bridge_passages 5": {"bridge_passages": 5},
    "bridge_top_k 10": {"bridge_top_k": 10},
    "chain first hop as a fact query": {"hop_fact_queries": True},
    # Issue 14b: letting better triples show. The first row is recall as issue 14 left it.
    "no fact anchor": {"fact_anchor": False},
    "bridge from facts": {"bridge_source": "facts"},
    "bridge from facts, no fact anchor": {"bridge_source": "facts", "fact_anchor": False},
    "bridge from facts, passage_weight 0.2": {"bridge_source": "facts", "passage_weight": 0.2},
    "bridge from facts, no passage prior": {"bridge_source": "facts", "passage_weight": 0.0},
    # Read-outs (incidence now divided by entity strength), prior and seed mix.
    "readout incidence": {"passage_readout": "incidence"},
    "readout blend": {"passage_readout": "blend"},
    "passage_weight 0.05": {"passage_weight": 0.05},
    "passage_weight 0.2": {"passage_weight": 0.2},
    "passage_weight 0.5 (issue 14 default)": {"passage_weight": 0.5},
    "issue 14 recall (passage_weight 0.5, no fact anchor)": {"passage_weight": 0.5, "fact_anchor": False},
    "no passage prior (graph only)": {"passage_weight": 0.0},
    "no BM25 in the prior": {"keyword_prior_share": 0.0},
    "fact seeds only (share 1.0)": {"fact_seed_share": 1.0},
    "entity seeds only (share 0.0)": {"fact_seed_share": 0.0},
}


def ablation_grid() -> dict[str, dict[str, Any]]:
    """The cross product of seed mix x read-out x passage weight, for ``--grid``."""
    grid: dict[str, dict[str, Any]] = {}
    for share in (0.0, 0.25, 0.5, 1.0):
        for readout in ("passage", "incidence", "blend"):
            for weight in (0.01, 0.05, 0.2):
                grid[f"share {share} / {readout} / pw {weight}"] = {
                    "fact_seed_share": share, "passage_readout": readout, "passage_weight": weight}
    return grid


# Issue 13: today's exact engine, what restricting the prior to the top M passages alone changes,
# and the local push on that same sparse reset (``--solvers``).
SOLVER_ARMS: dict[str, dict[str, Any]] = {
    "exact PPR, full prior": {"passage_prior_top": 0, "ppr_solver": "exact"},
    "exact PPR, top-M prior": {"ppr_solver": "exact"},
    "local push, top-M prior": {"ppr_solver": "push"},
}
# ``--solvers-epsilon``: the push's threshold, coarser than 1e-6 (the work falls ~5x a decade).
EPSILON_ARMS: dict[str, dict[str, Any]] = {
    "local push, epsilon 1e-6": {"ppr_solver": "push", "ppr_epsilon": 1e-6},
    "local push, epsilon 1e-5": {"ppr_solver": "push", "ppr_epsilon": 1e-5},
    "local push, epsilon 3e-5": {"ppr_solver": "push", "ppr_epsilon": 3e-5},
    "local push, epsilon 1e-4": {"ppr_solver": "push", "ppr_epsilon": 1e-4},
}


# -- pieces ------------------------------------------------------------------------


class CachedEmbedder:
    """An embedder that remembers every text it encoded: the ablation reruns the same queries."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self.backend = backend_of(inner)
        self._memo: dict[str, np.ndarray] = {}

    def encode(self, texts: list[str]) -> np.ndarray:
        missing = list(dict.fromkeys(t for t in texts if t not in self._memo))
        if missing:
            self._memo.update(zip(missing, self.inner.encode(missing), strict=True))
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._memo[t] for t in texts])


class ReusedVectors:
    """An embedder that first looks a text up among the vectors of sibling caches.

    A variant cache (another extractor revision, a chunking change) holds mostly
    texts a sibling cache of the same set already embedded with the same model;
    reading those vectors makes building it cost its new texts only. Only caches
    whose bound model and vector family are this embedder's are read, and read-only.
    """

    def __init__(self, inner: Embedder, siblings: list[Path]) -> None:
        self.inner, self.name, self.dim = inner, inner.name, inner.dim
        self.backend = backend_of(inner)
        self._known: dict[str, np.ndarray] = {}
        for path in siblings:
            db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            try:
                meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
                same_family = vector_family(meta.get("embedding_backend") or "torch") == vector_family(self.backend)
                if (meta.get("embedding_model") == inner.name and meta.get("embedding_dim") == str(inner.dim)
                        and same_family):
                    kept = stored_format(db)  # float16 in caches made since stop 56
                    for h, blob in db.execute("SELECT hash, vector FROM vectors"):
                        self._known.setdefault(h, unblob(blob, kept))
            except sqlite3.Error:
                continue  # not a hippo cache, or one being written: embed instead
            finally:
                db.close()
        self.reused = 0

    def encode(self, texts: list[str]) -> np.ndarray:
        hashes = [text_hash(t) for t in texts]
        missing = [t for t, h in zip(texts, hashes, strict=True) if h not in self._known]
        fresh = dict(zip(missing, self.inner.encode(missing), strict=True)) if missing else {}
        self.reused += len(texts) - len(missing)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([fresh[t] if t in fresh else self._known[h] for t, h in zip(texts, hashes, strict=True)])


def question_type(question: Question) -> str:
    """MuSiQue ``3hop1`` -> ``3hop``; HotpotQA ``bridge``/``comparison`` as given; else ``all``."""
    match = re.match(r"(\d+hop)", question.type)
    return match.group(1) if match else (question.type or "all")


def cache_path(dataset: str, extractor: str, settings: hippo.Settings, cache_dir: Path) -> Path:
    model = re.sub(r"[^A-Za-z0-9._-]+", "_", settings.embedding_model)
    if vector_family(settings.embedding_backend) != vector_family("torch"):  # ONNX fp32 = torch's vectors
        model += f"-{settings.embedding_backend}"
    changed = {k: getattr(settings, k) for k in INDEX_SETTINGS
               if getattr(settings, k) != hippo.Settings.model_fields[k].default
               and k not in ("embedding_model", "embedding_backend")}
    suffix = "-" + hashlib.sha1(json.dumps(changed, sort_keys=True).encode()).hexdigest()[:8] if changed else ""
    return cache_dir / f"{dataset}-{EXTRACTOR_REVISION.get(extractor, extractor)}-{model}{suffix}.db"


def make_extractor(kind: str, dataset: Dataset) -> Extractor:
    if kind == "spacy":
        return SpacyExtractor()
    if dataset.openie_file is None:
        raise SystemExit(f"{dataset.name} ships no OpenIE file; use --extractor spacy")
    return OpenIEImport.from_file(dataset.openie_file, fallback=SpacyExtractor())


def extractor_kinds(choice: str, dataset: Dataset) -> list[str]:
    if choice != "both":
        return [choice]
    if dataset.openie_file is None:
        log(f"{dataset.name} ships no OpenIE file: spaCy only")
        return ["spacy"]
    return ["spacy", "openie"]


def expected_passages(dataset: Dataset, settings: hippo.Settings) -> int:
    _, passages = split_documents(validate_documents(dataset.documents, settings), settings)
    return len(passages)


@dataclass
class IndexInfo:
    path: str
    reused: bool
    seconds: float
    timings: dict[str, float] = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)
    graph: dict[str, int] = field(default_factory=dict)
    openie_missed: int | None = None
    openie_chunks: int | None = None  # passages matched as chunks of a longer OpenIE record


def open_indexed(dataset: Dataset, kind: str, settings: hippo.Settings, embedder: Embedder,
                 path: Path) -> tuple[Memory, IndexInfo]:
    """A memory over the cached index, indexing first unless the cache already holds every passage."""
    memory = Memory(SQLiteStore(path), settings=settings, embedder=embedder)
    want = expected_passages(dataset, settings)
    have = memory.stats().passages
    info = IndexInfo(path=str(path), reused=have == want, seconds=0.0)
    if have != want:
        extractor = make_extractor(kind, dataset)
        siblings = [p for p in sorted(path.parent.glob(f"{dataset.name}-*.db")) if p != path]
        reuse = ReusedVectors(embedder, siblings)
        builder = Memory(memory.store, settings=settings, embedder=reuse)
        log(f"indexing {dataset.name} with {kind}: {want} passages ({have} cached) -> {path}")
        with Stopwatch() as watch:
            result = builder.index(dataset.documents, extractor=extractor, progress=progress_printer(kind))
        log(f"  {reuse.reused} vectors reused from {len(siblings)} sibling cache(s)")
        memory = Memory(memory.store, settings=settings, embedder=embedder)
        info.seconds, info.timings = watch.seconds, dict(result.timings)
        if isinstance(extractor, OpenIEImport):
            info.openie_missed, info.openie_chunks = extractor.missed, extractor.chunks
        log(f"  indexed in {watch.seconds:.0f}s: {result.timings}")
    else:
        log(f"reusing {path} ({have} passages)")
    info.stats = memory.stats().model_dump(mode="json")
    info.graph = memory.graph_stats()
    return memory, info


Ranker = Callable[[str], list[hippo.Hit]]


@dataclass
class MethodResult:
    name: str
    extractor: str
    recall: dict[int, float]  # k -> mean recall, in percent
    by_type: dict[str, float]  # type -> mean R@5, in percent
    per_question: dict[str, list[float]]  # id -> [R@1, R@2, R@5, R@10]
    seconds: float
    strategies: dict[str, int] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    latency_ms: list[float] = field(default_factory=list)  # recall without query embedding, per question

    @property
    def p50_ms(self) -> float:
        return float(np.median(self.latency_ms)) if self.latency_ms else float("nan")


def evaluate(name: str, extractor: str, dataset: Dataset, questions: Sequence[Question], rank: Ranker,
             strategy_of: Callable[[], str | None] = lambda: None) -> MethodResult:
    scores: dict[str, list[float]] = {}
    strategies: dict[str, int] = defaultdict(int)
    with Stopwatch() as watch:
        for q in questions:
            hits = rank(q.question)
            gold = dataset.gold_document_ids(q)
            scores[q.id] = [recall_at(hits, gold, k) for k in KS]
            if (s := strategy_of()) is not None:
                strategies[s] += 1
    matrix = np.array([scores[q.id] for q in questions]) * 100
    by_type: dict[str, list[float]] = defaultdict(list)
    for q in questions:
        by_type[question_type(q)].append(scores[q.id][KS.index(5)] * 100)
    return MethodResult(
        name=name, extractor=extractor, recall={k: float(matrix[:, i].mean()) for i, k in enumerate(KS)},
        by_type={t: float(np.mean(v)) for t, v in sorted(by_type.items())}, per_question=scores,
        seconds=watch.seconds, strategies=dict(strategies),
    )


def graph_ranker(memory: Memory, latency: list[float] | None = None) -> tuple[Ranker, Callable[[], str | None]]:
    """``recall`` as a ranker, plus a getter for the strategy of the last call.

    ``latency`` collects each call's recall time without its query embedding (ms).
    """
    last: dict[str, str] = {}

    def rank(query: str) -> list[hippo.Hit]:
        result = memory.recall(query, n=5, k=HITS)
        last["strategy"] = result.strategy
        if latency is not None:
            latency.append(1000 * (result.timings.get("total", 0.0) - result.timings.get("embed", 0.0)))
        return result.hits

    return rank, lambda: last.get("strategy")


def run_baselines(memory: Memory, dataset: Dataset, questions: Sequence[Question]) -> list[MethodResult]:
    results = []
    for mode in BASELINES:
        rank: Ranker = lambda query, mode=mode: memory.retrieve(query, k=HITS, mode=mode)
        results.append(evaluate(mode, "–", dataset, questions, rank))
        log(f"  {mode}: R@5 {results[-1].recall[5]:.1f} ({results[-1].seconds:.1f}s)")
    return results


def run_variants(memory: Memory, kind: str, dataset: Dataset, questions: Sequence[Question],
                 base: dict[str, Any], variants: dict[str, dict[str, Any]]) -> list[MethodResult]:
    """``recall`` under each settings variant on the same store and embedder (one projection load each)."""
    results = []
    for label, overrides in variants.items():
        settings = make_settings({**base, **overrides})
        variant = Memory(memory.store, settings=settings, embedder=memory.embedder)
        latency: list[float] = []
        rank, strategy = graph_ranker(variant, latency)
        result = evaluate(f"hippo: {label}", kind, dataset, questions, rank, strategy)
        result.settings, result.latency_ms = overrides, latency
        results.append(result)
        log(f"  {label}: R@2 {result.recall[2]:.1f} R@5 {result.recall[5]:.1f} ({result.seconds:.1f}s)")
    return results


def run_solvers(memory: Memory, kind: str, dataset: Dataset, questions: Sequence[Question],
                base: dict[str, Any], arms: dict[str, dict[str, Any]]) -> tuple[list[MethodResult], dict[str, Any]]:
    """The ``arms`` (``SOLVER_ARMS`` first) on one index, with each arm's top-10 hit overlap against the exact
    solver on the same reset, and its recall latency without query embedding."""
    results, hits, latency = [], {}, {}
    for label, overrides in arms.items():
        variant = Memory(memory.store, settings=make_settings({**base, **overrides}), embedder=memory.embedder)
        found: dict[str, list[str]] = {}
        took: list[float] = []

        def rank(query: str, variant: Memory = variant, found: dict = found, took: list = took) -> list[hippo.Hit]:
            result = variant.recall(query, n=5, k=HITS)
            found[query] = [h.id for h in result.hits]
            took.append((result.timings["total"] - result.timings.get("embed", 0.0)) * 1000)
            return result.hits

        result = evaluate(f"hippo: {label}", kind, dataset, questions, rank)
        result.settings = overrides
        results.append(result)
        hits[label], latency[label] = found, float(np.median(took))
        log(f"  {label}: R@5 {result.recall[5]:.1f} (p50 {latency[label]:.1f} ms w/o embedding)")

    def overlap(a: str, b: str) -> float:
        pairs = [(hits[a][q], hits[b][q]) for q in hits[a]]
        return float(np.mean([len(set(x) & set(y)) / max(1, len(x)) for x, y in pairs]))

    full, exact, push, *others = arms
    summary = {"overlap_push_vs_exact": overlap(push, exact), "overlap_top_m_vs_full_prior": overlap(exact, full),
               "overlap_vs_exact": {arm: overlap(arm, exact) for arm in (push, *others)},
               "p50_ms": latency, "r5": {r.name.removeprefix("hippo: "): r.recall[5] for r in results}}
    log(f"  top-10 overlap: push vs exact {summary['overlap_push_vs_exact']:.3f}, "
        f"top-M vs full prior {summary['overlap_top_m_vs_full_prior']:.3f}")
    return results, summary


# -- output ------------------------------------------------------------------------


def render(dataset: Dataset, results: list[MethodResult], ablation: list[MethodResult],
           indexes: dict[str, IndexInfo], record: dict[str, Any]) -> str:
    header = ["method", "extractor", *(f"R@{k}" for k in KS), "strategies", "query s"]

    def row(r: MethodResult) -> list[Any]:
        strategies = ", ".join(f"{s} {n}" for s, n in sorted(r.strategies.items())) or ""
        return [r.name, r.extractor, *(r.recall[k] for k in KS), strategies, f"{r.seconds:.1f}"]

    types = sorted({t for r in results for t in r.by_type})
    counts = defaultdict(int)
    for q in record["questions_used"]:
        counts[q] += 1
    parts = [
        f"# Quality: {dataset.name}",
        "",
        f"{record['n_questions']} questions, {record['n_passages']} passages; Recall@k of gold documents "
        f"in the first k distinct documents of {HITS} hits (percent).",
        f"Settings: `{json.dumps(record['settings_overrides'])}` over hippo defaults. "
        f"Machine: {machine_line(record['machine'])}.",
        "",
        markdown_table(header, [row(r) for r in results]),
        "",
        "## R@5 by question type",
        "",
        markdown_table(["method", "extractor", *(f"{t} (n={counts[t]})" for t in types)],
                       [[r.name, r.extractor, *(r.by_type.get(t, float("nan")) for t in types)] for r in results]),
    ]
    if ablation:
        parts += ["", "## Ablation (graph recall, same index)", "",
                  markdown_table(header, [row(r) for r in ablation])]
    for kind, summary in record.get("solvers", {}).items():
        parts += ["", f"## Exact PPR vs local push ({kind} graph)", "",
                  markdown_table(["arm", "R@5", "top-10 overlap with exact, top-M", "p50 ms w/o embedding"],
                                 [[arm, summary["r5"][arm], f"{summary['overlap_vs_exact'].get(arm, 1.0):.3f}"
                                   if "push" in arm else "–", f"{ms:.1f}"] for arm, ms in summary["p50_ms"].items()]),
                  "", f"Top-10 hit overlap: local push vs exact on the same reset "
                  f"{summary['overlap_push_vs_exact']:.3f}; top-M prior vs full prior (both exact) "
                  f"{summary['overlap_top_m_vs_full_prior']:.3f}."]
    reference = REFERENCE_R5.get(dataset.name)
    if reference:
        parts += ["", "Reference R@5 (plain re-implementation, MiniLM + spaCy, issue 4): "
                  + ", ".join(f"{k} {v}" for k, v in reference.items()) + "."]
    parts += ["", "## Indexes", "",
              markdown_table(["extractor", "reused", "index s", "extract", "embed", "graph", "store", "passages",
                              "entities", "facts", "synonyms"],
                             [[kind, info.reused, f"{info.seconds:.0f}",
                               *(f"{info.timings.get(s, 0):.1f}" for s in ("extract", "embed", "graph", "store")),
                               info.stats.get("passages"), info.stats.get("entities"), info.stats.get("facts"),
                               info.stats.get("synonyms")] for kind, info in indexes.items()])]
    parts += ["", f"Command: `{record['command']}`"]
    return "\n".join(parts)


def short_name(dataset: str) -> str:
    return SETS.get(dataset, dataset)


def _types(r: MethodResult) -> str:
    return " · ".join(f"{t} {v:.1f}" for t, v in r.by_type.items())


def _reference(run: SetRun, r: MethodResult) -> MethodResult | None:
    """The default hippo row a variant is compared with (same set, same extractor)."""
    return next((x for x in run.results if x.name == "hippo" and x.extractor == r.extractor), None)


def render_summary(runs: list[SetRun], combined: dict[str, Any]) -> str:
    """One table for every set: baselines and hippo at R@1/2/5/10, per-type R@5, ablation deltas."""
    sizes = ", ".join(f"{short_name(r.dataset.name)} {len(r.questions)} questions / "
                      f"{next(iter(r.indexes.values())).stats.get('passages') if r.indexes else 0} passages"
                      for r in runs)
    header = ["set", "method", "extractor", *(f"R@{k}" for k in KS), "R@2 − dense", "R@5 − dense",
              "recall p50 ms*"]
    rows = []
    for run in runs:
        dense = next((r for r in run.results if r.name == "dense"), None)
        for r in run.results:
            d2 = r.recall[2] - dense.recall[2] if dense and r is not dense else float("nan")
            d5 = r.recall[5] - dense.recall[5] if dense and r is not dense else float("nan")
            rows.append([short_name(run.dataset.name), r.name, r.extractor, *(r.recall[k] for k in KS),
                         f"{d2:+.1f}" if d2 == d2 else "", f"{d5:+.1f}" if d5 == d5 else "",
                         f"{r.p50_ms:.1f}" if r.latency_ms else ""])
    parts = [
        "# Quality: " + ", ".join(short_name(r.dataset.name) for r in runs),
        "",
        f"{sizes}. Recall@k of gold documents in the first k distinct documents of {HITS} hits (percent). "
        f"Settings: `{json.dumps(combined['settings_overrides'])}` over hippo defaults. "
        f"Machine: {machine_line(combined['machine'])}.",
        "",
        markdown_table(header, rows),
        "",
        "\\* recall p50 without the query embedding, milliseconds, measured in this run.",
        "",
        "## R@5 by question type",
        "",
        markdown_table(["set", "method", "extractor", "R@5 by type (n)"],
                       [[short_name(run.dataset.name), r.name, r.extractor, _types(r)]
                        for run in runs for r in run.results]),
        "",
        "Types (questions): " + "; ".join(
            f"{short_name(run.dataset.name)} " + ", ".join(
                f"{t} {n}" for t, n in sorted(defaultdict_count(question_type(q) for q in run.questions).items()))
            for run in runs) + ".",
    ]
    if any(run.ablation for run in runs):
        labels = list(dict.fromkeys((r.name, r.extractor) for run in runs for r in run.ablation))
        sets = [run for run in runs if run.ablation]
        head = ["variant", "extractor"]
        for run in sets:
            head += [f"{short_name(run.dataset.name)} R@2", "R@5", "ΔR@5"]
        head += ["p50 ms*"]
        table = []
        for name, extractor in labels:
            row: list[Any] = [name.removeprefix("hippo: "), extractor]
            p50 = float("nan")
            for run in sets:
                found = next((r for r in run.ablation if (r.name, r.extractor) == (name, extractor)), None)
                ref = _reference(run, found) if found else None
                if found is None:
                    row += ["", "", ""]
                    continue
                row += [found.recall[2], found.recall[5],
                        f"{found.recall[5] - ref.recall[5]:+.1f}" if ref else ""]
                if p50 != p50:
                    p50 = found.p50_ms
            table.append([*row, f"{p50:.1f}" if p50 == p50 else ""])
        parts += ["", "## Ablation (graph recall on the same indexes; ΔR@5 against the default hippo row)", "",
                  markdown_table(head, table)]
    parts += ["", f"Command: `{combined['command']}`"]
    return "\n".join(parts)


def defaultdict_count(items) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for item in items:
        counts[item] += 1
    return counts


def summary_record(runs: list[SetRun]) -> list[dict[str, Any]]:
    return [{"set": run.dataset.name, "method": r.name, "extractor": r.extractor,
             "recall": {f"R@{k}": v for k, v in r.recall.items()}, "r5_by_type": r.by_type,
             "recall_p50_ms_without_embedding": r.p50_ms if r.latency_ms else None}
            for run in runs for r in [*run.results, *run.ablation]]


def as_record(r: MethodResult) -> dict[str, Any]:
    return {"method": r.name, "extractor": r.extractor, "recall": {f"R@{k}": v for k, v in r.recall.items()},
            "r5_by_type": r.by_type, "seconds": r.seconds, "strategies": r.strategies, "settings": r.settings,
            "recall_p50_ms_without_embedding": r.p50_ms if r.latency_ms else None,
            "per_question": r.per_question}


# -- main --------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", default=",".join(SETS),
                        help="comma-separated folders under $HIPPO_DATASETS (../shared/datasets) or paths; "
                             "default: the three tuning sets, reported in one table")
    parser.add_argument("--dataset", help="one set only (same as --datasets NAME)")
    parser.add_argument("--extractor", choices=("spacy", "openie", "both"), default="both")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="override a hippo setting for every method (repeatable)")
    parser.add_argument("--quick", type=int, metavar="N", help="only the first N questions of each set")
    parser.add_argument("--ablation", action="store_true", help="also graph recall under settings variants")
    parser.add_argument("--solvers", action="store_true",
                        help="also exact PPR with the full prior (today's engine), exact with the top-M prior, "
                             "and local push, with their top-10 overlap (issue 13)")
    parser.add_argument("--solvers-epsilon", action="store_true", help="with --solvers: also push at epsilon 1e-6 ... 1e-4")
    parser.add_argument("--grid", action="store_true",
                        help="with --ablation: the full seed-mix x read-out x passage-weight grid")
    parser.add_argument("--only", action="append", default=[], metavar="LABEL",
                        help="with --ablation: only the variants whose label contains LABEL (repeatable)")
    parser.add_argument("--cache-dir", type=Path, default=CACHE)
    parser.add_argument("--out", type=Path, default=RESULTS, help="where the JSON and Markdown go")
    parser.add_argument("--smoke", action="store_true",
                        help="seconds-long check on hipporag_sample, in a temporary folder (for CI)")
    args = parser.parse_args(argv)
    if args.dataset:
        args.datasets = args.dataset
    if args.smoke:
        args.datasets, args.ablation, args.solvers = "hipporag_sample", True, True
        scratch = Path(tempfile.mkdtemp(prefix="hippo-bench-"))
        args.cache_dir, args.out = scratch / "cache", scratch
    args.datasets = [d for d in args.datasets.split(",") if d.strip()]
    return args


@dataclass
class SetRun:
    """Everything measured on one dataset."""

    dataset: Dataset
    questions: list[Question]
    results: list[MethodResult]
    ablation: list[MethodResult]
    indexes: dict[str, IndexInfo]
    solvers: dict[str, Any] = field(default_factory=dict)  # --solvers: per extractor, overlap and latency


def variants_of(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    variants = ablation_grid() if args.grid else ABLATION
    if args.only:
        variants = {k: v for k, v in variants.items() if any(o in k for o in args.only)}
    return variants


def run_set(name: str, args: argparse.Namespace, overrides: dict[str, Any], settings: hippo.Settings,
            embedder: Embedder) -> SetRun:
    dataset = load_dataset(name)
    questions = dataset.questions[: args.quick] if args.quick else dataset.questions
    log(f"{dataset.name}: {len(dataset.documents)} documents, {len(questions)} questions")
    results: list[MethodResult] = []
    ablation: list[MethodResult] = []
    indexes: dict[str, IndexInfo] = {}
    solvers: dict[str, Any] = {}
    for kind in extractor_kinds(args.extractor, dataset):
        path = cache_path(dataset.name, kind, settings, args.cache_dir)
        memory, indexes[kind] = open_indexed(dataset, kind, settings, embedder, path)
        if not results:  # baselines read passages only: the extractor does not change them
            results += run_baselines(memory, dataset, questions)
        latency: list[float] = []
        rank, strategy = graph_ranker(memory, latency)
        results.append(evaluate("hippo", kind, dataset, questions, rank, strategy))
        results[-1].latency_ms = latency
        log(f"  hippo ({kind}): R@2 {results[-1].recall[2]:.1f} R@5 {results[-1].recall[5]:.1f} "
            f"({results[-1].seconds:.1f}s)")
        if args.ablation:
            ablation += run_variants(memory, kind, dataset, questions, overrides, variants_of(args))
        if args.solvers:
            chosen = {**SOLVER_ARMS, **(EPSILON_ARMS if args.solvers_epsilon else {})}
            arms, solvers[kind] = run_solvers(memory, kind, dataset, questions, overrides, chosen)
            results += arms
        memory.close()
    return SetRun(dataset=dataset, questions=questions, results=results, ablation=ablation, indexes=indexes,
                  solvers=solvers)


def set_record(run: SetRun, overrides: dict[str, Any], settings: hippo.Settings, machine: dict[str, Any],
               command: str) -> dict[str, Any]:
    return {
        "dataset": run.dataset.name,
        "n_questions": len(run.questions),
        "n_passages": next(iter(run.indexes.values())).stats.get("passages") if run.indexes else 0,
        "questions_used": [question_type(q) for q in run.questions],
        "settings_overrides": overrides,
        "settings": settings.model_dump(mode="json"),
        "hits": HITS,
        "results": [as_record(r) for r in run.results],
        "ablation": [as_record(r) for r in run.ablation],
        "solvers": run.solvers,
        "indexes": {k: vars(v) for k, v in run.indexes.items()},
        "reference_r5": REFERENCE_R5.get(run.dataset.name),
        "machine": machine,
        "command": command,
    }


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    overrides = parse_overrides(args.overrides)
    settings = make_settings(overrides)
    command = "python benchmarks/quality.py " + " ".join(sys.argv[1:] if argv is None else argv)

    # Quality does not depend on threads; igraph's OpenMP team only stalls PPR on 2 cores.
    with Stopwatch() as total, igraph_single_thread():
        with Stopwatch() as load:
            embedder = CachedEmbedder(open_embedder(settings))
        log(f"embedder loaded in {load.seconds:.1f}s")
        runs = [run_set(name, args, overrides, settings, embedder) for name in args.datasets]

    machine = machine_info()
    # A plain or --ablation run is the record (--ablation is a superset); partial or tweaked
    # runs get their own files so they never overwrite it.
    suffix = "-grid" if args.grid else ""
    suffix += "-solvers" if args.solvers and not args.ablation else ""
    suffix += f"-quick{args.quick}" if args.quick else ""
    suffix += "-only-" + hashlib.sha1("|".join(args.only).encode()).hexdigest()[:8] if args.only else ""
    if overrides:
        suffix += "-set-" + hashlib.sha1(json.dumps(overrides, sort_keys=True).encode()).hexdigest()[:8]
    records = []
    for run in runs:
        record = set_record(run, overrides, settings, machine, command)
        record["wall_seconds"] = {"total": total.seconds, "embedder_load": load.seconds}
        records.append(record)
        write_outputs(f"quality-{run.dataset.name}{suffix}", record,
                      render(run.dataset, run.results, run.ablation, run.indexes, record), args.out)
    combined = {"sets": [r["dataset"] for r in records], "settings_overrides": overrides, "machine": machine,
                "command": command, "wall_seconds": total.seconds, "summary": summary_record(runs),
                "records": records}
    markdown = render_summary(runs, combined)
    stem = "quality" if len(runs) > 1 else f"quality-{runs[0].dataset.name}-summary"
    json_path, md_path = write_outputs(stem + suffix, combined, markdown, args.out)
    print(markdown)
    log(f"wrote {json_path} and {md_path} ({total.seconds:.0f}s)")
    return records[0] if len(records) == 1 else combined


if __name__ == "__main__":
    main()
