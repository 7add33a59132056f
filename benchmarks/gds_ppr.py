"""Personalized PageRank in Neo4j's Graph Data Science library against hippo's local push, on the
same resets, over the same Neo4j.

    NEO4J_GDS=1 scripts/neo4j start                  # a server with GDS 2.13 (from Maven Central)
    python benchmarks/gds_ppr.py --size 10000 --store bolt://127.0.0.1:7700

The store must hold the synthetic scale store of ``--size`` passages (``benchmarks/scale.py
--build-only``, then ``hippo neo4j import``). Store-side recalls (``HIPPO_NEO4J_READ=store``) of
synthetic questions run as usual; each recall's reset (the seed and prior weights its walk starts
from) and its push result are kept, with the push's own time. Then, on a GDS projection of the
whole graph (``hippo/store/neo4j/gds.py``), each reset is walked again three ways:

- **uniform**: GDS from the reset's nodes with equal weights, against the push from the same
  uniform reset (do the two solvers agree?);
- **bucketed**: GDS 2.13 takes ``sourceNodes`` without weights (``[node, weight]`` pairs are
  refused), so a weighted reset is split into ``--buckets`` groups of similar weight, one GDS call
  each, their top passages summed with each group's total weight (PPR is linear in the reset);
  against the push from the real reset, what recall runs;
- the projection's own cost: time, nodes and relationships.

Top-10 passage overlap and per-call latency (p50/p95) for each, JSON and Markdown in ``results/``.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # also when run as a script

from benchmarks.common import log, machine_info, machine_line, markdown_table, percentiles, write_outputs  # noqa: E402

TOP = 10
GRAPH = "hippo-bench"


class Capture:
    """Wraps ``StoreSource.pagerank``: keeps each recall's reset, push result and push time."""

    def __init__(self) -> None:
        self.runs: list[dict[str, Any]] = []

    def install(self) -> None:
        from hippo.memory.store_source import StoreSource

        original = StoreSource.pagerank
        capture = self

        def pagerank(source: Any, nodes: np.ndarray, weights: np.ndarray, damping: float, **kw: Any) -> Any:
            clock = time.perf_counter()
            scores = original(source, nodes, weights, damping, **kw)
            took = time.perf_counter() - clock
            capture.runs.append({"reset": list(zip(source.record_ids(np.asarray(nodes).tolist()),
                                                   np.asarray(weights, dtype=float).tolist(), strict=True)),
                                 "top": _top_passages(source, scores), "push_ms": 1000 * took,
                                 "damping": damping, "source": source, "kw": kw})
            return scores

        StoreSource.pagerank = pagerank  # type: ignore[method-assign]


def _top_passages(source: Any, scores: Any, top: int = TOP) -> list[str]:
    mask = np.array([bool(source.table.passage[h]) for h in scores.vertices.tolist()], dtype=bool)
    vertices, values = scores.vertices[mask], scores.scores[mask]
    order = np.argsort(-values, kind="stable")[:top]
    return source.record_ids(vertices[order].tolist())


def _overlap(a: Sequence[str], b: Sequence[str]) -> float:
    return len(set(a) & set(b)) / max(1, min(len(a), len(b), TOP))


def buckets(reset: Sequence[tuple[str, float]], count: int) -> list[tuple[list[str], float]]:
    """The reset's nodes in ``count`` groups by log-weight, each with its total weight."""
    live = [(rid, w) for rid, w in reset if w > 0]
    logs = np.log(np.array([w for _, w in live]))
    edges = np.quantile(logs, np.linspace(0, 1, count + 1)[1:-1]) if count > 1 else np.array([])
    groups: dict[int, list[tuple[str, float]]] = {}
    for (rid, w), x in zip(live, logs, strict=True):
        groups.setdefault(int(np.searchsorted(edges, x)), []).append((rid, w))
    return [([rid for rid, _ in g], sum(w for _, w in g)) for g in groups.values()]


def run(size: int, store: str, queries: int, bucket_count: int) -> dict[str, Any]:
    import hippo
    from benchmarks.synthetic import SyntheticCorpus, SyntheticEmbedder, SyntheticExtractor, query_phrases
    from hippo.graph.ppr import push_pagerank
    from hippo.store.neo4j import Neo4jStore, gds
    from hippo.store.neo4j.bulk import connect

    db = connect(store)
    found = gds.require(db)
    settings = hippo.Settings(neo4j_read="store")
    projection = gds.project(db, GRAPH, relation_weight=settings.relation_weight,
                             mention_weight=settings.mention_weight)
    log(f"GDS {found}: projected {projection.nodes:,} nodes, {projection.relationships:,} relationships "
        f"in {projection.seconds:.1f}s")

    capture = Capture()
    capture.install()
    memory = hippo.Memory(Neo4jStore.from_url(store), settings=settings, embedder=SyntheticEmbedder(),
                          extractor=SyntheticExtractor())
    memory._recaller._phrases = query_phrases
    corpus = SyntheticCorpus(size)
    rng = np.random.default_rng(size + 1)
    for i in rng.integers(size, size=queries).tolist():
        memory.recall(corpus.query(int(i)), n=5, k=TOP)
    log(f"{len(capture.runs)} store-side recalls captured")

    rows: dict[str, list[float]] = {k: [] for k in ("push_ms", "uniform_push_ms", "gds_uniform_ms",
                                                    "gds_bucketed_ms", "overlap_uniform", "overlap_bucketed")}
    for r in capture.runs:
        reset, damping, source = r["reset"], r["damping"], r["source"]
        rows["push_ms"].append(r["push_ms"])
        ids = [rid for rid, w in reset if w > 0]
        handles = source.nodes(ids)
        nodes = np.array([handles[rid] for rid in ids if rid in handles], dtype=np.int64)
        clock = time.perf_counter()
        uniform = push_pagerank(source, nodes, np.ones(len(nodes)), damping, r["kw"]["epsilon"])
        rows["uniform_push_ms"].append(1000 * (time.perf_counter() - clock))
        clock = time.perf_counter()
        by_gds = gds.pagerank(db, GRAPH, ids, damping=damping, top=TOP)
        rows["gds_uniform_ms"].append(1000 * (time.perf_counter() - clock))
        rows["overlap_uniform"].append(_overlap([p for p, _ in by_gds], _top_passages(source, uniform)))
        clock = time.perf_counter()
        summed: dict[str, float] = {}
        for group, total in buckets(reset, bucket_count):
            for pid, score in gds.pagerank(db, GRAPH, group, damping=damping, top=20 * TOP):
                summed[pid] = summed.get(pid, 0.0) + total * score
        rows["gds_bucketed_ms"].append(1000 * (time.perf_counter() - clock))
        bucketed = sorted(summed, key=lambda p: -summed[p])[:TOP]
        rows["overlap_bucketed"].append(_overlap(bucketed, r["top"]))
    memory.close()
    gds.drop(db, GRAPH)
    db.close()
    return {"size": size, "store": store, "gds": found, "queries": queries, "walks": len(capture.runs),
            "buckets": bucket_count,
            "projection": {"nodes": projection.nodes, "relationships": projection.relationships,
                           "seconds": round(projection.seconds, 2)},
            "reset_size": percentiles([len(r["reset"]) for r in capture.runs]),
            "ms": {k: percentiles(v) for k, v in rows.items() if k.endswith("_ms")},
            "overlap": {k: float(np.mean(v)) for k, v in rows.items() if k.startswith("overlap")},
            "machine": machine_info()}


def render(r: dict[str, Any]) -> str:
    ms, ov, p = r["ms"], r["overlap"], r["projection"]
    table = markdown_table(
        ["walk", "solver", "ms p50", "ms p95", f"top-{TOP} overlap with the push"],
        [["recall's reset (weighted)", "local push, store-side (hippo)", f"{ms['push_ms']['p50']:.0f}",
          f"{ms['push_ms']['p95']:.0f}", "1"],
         ["", f"GDS, {r['buckets']} weight buckets", f"{ms['gds_bucketed_ms']['p50']:.0f}",
          f"{ms['gds_bucketed_ms']['p95']:.0f}", f"{ov['overlap_bucketed']:.3f}"],
         ["same nodes, equal weights", "local push, store-side", f"{ms['uniform_push_ms']['p50']:.0f}",
          f"{ms['uniform_push_ms']['p95']:.0f}", "1"],
         ["", "GDS", f"{ms['gds_uniform_ms']['p50']:.0f}", f"{ms['gds_uniform_ms']['p95']:.0f}",
          f"{ov['overlap_uniform']:.3f}"]])
    return "\n".join([
        "# Personalized PageRank: GDS against the local push", "",
        f"{r['size']:,}-passage synthetic store in Neo4j; GDS {r['gds']}; {r['queries']} store-side recalls "
        f"({r['walks']} walks), reset size p50 {r['reset_size']['p50']:.0f}. Projection of the whole graph: "
        f"{p['nodes']:,} nodes, {p['relationships']:,} relationships, {p['seconds']:.1f} s. A push warms the "
        "reader's edge cache, so the second push over the same reset (equal weights) reads fewer edges from Neo4j; "
        "each GDS call walks the whole projection.", "",
        table, "", f"Machine: {machine_line(r['machine'])}", "",
        f"Command: `python benchmarks/gds_ppr.py --size {r['size']} --queries {r['queries']} "
        f"--buckets {r['buckets']} --store {r['store']}`"])


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, required=True, help="passages of the synthetic store in Neo4j")
    parser.add_argument("--store", required=True)
    parser.add_argument("--queries", type=int, default=30)
    parser.add_argument("--buckets", type=int, default=4)
    parser.add_argument("--stem", default="gds_ppr")
    args = parser.parse_args(argv)
    record = run(args.size, args.store, args.queries, args.buckets)
    markdown = render(record)
    write_outputs(args.stem, record, markdown)
    print(markdown)


if __name__ == "__main__":
    main()
