"""Scale: Personalized PageRank and read-out time on synthetic graphs of growing size.

Graphs of 1k, 10k, 100k, 300k (and, if memory allows, 1M) passages are generated
with a fixed seed and built as a ``hippo.graph.GraphProjection`` straight from
``GraphData`` (no store, no embeddings):

- entity mentions are Zipf-distributed (a few hub entities in many passages,
  a long tail in one): about 8 distinct entities per passage;
- about 6 relation edges per passage, between entities it mentions;
- about 1 synonym edge per entity, score in [0.8, 1];

which is the shape of a HippoRAG graph over encyclopedic text.

Each query's reset vector is realistic: 5 entity seeds weighted by node
specificity (1 / passages mentioning them) plus 0.05 x a min-max scaled random
dense prior over every passage, as ``hippo.memory.recall`` builds it. Timed
per query: ``hippo.graph.personalized_pagerank`` (igraph PRPACK) and the
read-out ``hippo.graph.scoring.passage_mass`` (blend). For comparison, the
same PPR as a power iteration over a CSR transition matrix built once per
graph (``--csr``, the candidate fix when PRPACK is slow), with its top-10
agreement against PRPACK.

Writes ``results/scale.json``, ``results/scale.md`` and ``results/scale.png``
(PPR time against edges, log-log) and prints the fitted growth exponent.

    python benchmarks/scale.py
    python benchmarks/scale.py --smoke
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

try:
    from benchmarks.common import (RESULTS, Stopwatch, available_ram_gb, igraph_single_thread, log, machine_info,
                                   machine_line, markdown_table, peak_rss_mb, percentiles, write_outputs)
except ImportError:  # run as ``python benchmarks/scale.py``
    from common import (RESULTS, Stopwatch, available_ram_gb, igraph_single_thread, log,  # type: ignore
                        machine_info, machine_line, markdown_table, peak_rss_mb, percentiles, write_outputs)

from hippo.config import Settings
from hippo.graph import GraphProjection, Transition, personalized_pagerank, power_pagerank
from hippo.graph.projection import GraphView
from hippo.graph.scoring import minmax, passage_mass
from hippo.memory.recall import Recaller
from hippo.memory.state import DerivedState
from hippo.memory.vectors import VectorIndex
from hippo.store import GraphData

SEED = 20240531
LIMIT_MS = 50.0  # the recall budget for PPR at 100k passages (issue 4)
# Peak RSS per edge measured at 100k passages, with headroom: decides whether 1M fits.
BYTES_PER_EDGE = 1_500


@dataclass(frozen=True)
class Shape:
    mentions: float = 8.0  # distinct entities per passage
    relations: float = 6.0  # relation edges per passage
    synonyms: float = 1.0  # synonym edges per entity
    entities_per_passage: float = 4.0  # vocabulary size / passages
    zipf: float = 1.0  # exponent of the entity popularity power law
    seeds: int = 5
    passage_weight: float = 0.05
    damping: float = 0.5


# -- generation --------------------------------------------------------------------


def zipf_sampler(rng: np.random.Generator, vocabulary: int, exponent: float):
    """Draw entity ranks with P(rank r) proportional to r^-exponent, 0-based."""
    cdf = np.cumsum(1.0 / np.arange(1, vocabulary + 1) ** exponent)
    cdf /= cdf[-1]
    return lambda size: np.minimum(np.searchsorted(cdf, rng.random(size)), vocabulary - 1)


def synthetic_graph(passages: int, shape: Shape, seed: int = SEED) -> GraphData:
    """A HippoRAG-shaped graph: Zipf mentions, relations among co-mentioned entities, synonyms."""
    rng = np.random.default_rng(seed)
    vocabulary = max(16, int(passages * shape.entities_per_passage))
    draw = zipf_sampler(rng, vocabulary, shape.zipf)

    # Mentions: Poisson counts around the target, deduplicated within a passage.
    counts = np.maximum(1, rng.poisson(shape.mentions, passages))
    owner = np.repeat(np.arange(passages), counts)
    entity = draw(int(counts.sum()))
    pairs = np.unique(owner * vocabulary + entity)
    m_passage, m_entity = pairs // vocabulary, pairs % vocabulary
    starts = np.searchsorted(m_passage, np.arange(passages))
    sizes = np.diff(np.append(starts, len(m_passage)))

    # Relations: two distinct mentioned entities of the same passage.
    r_counts = rng.poisson(shape.relations, passages) * (sizes > 1)
    r_passage = np.repeat(np.arange(passages), r_counts)
    a = rng.integers(0, sizes[r_passage])
    b = (a + 1 + rng.integers(0, np.maximum(sizes[r_passage] - 1, 1))) % sizes[r_passage]
    r_subject, r_object = m_entity[starts[r_passage] + a], m_entity[starts[r_passage] + b]

    # Synonyms: about one partner per used entity, among used entities.
    used = np.unique(m_entity)
    s_counts = rng.poisson(shape.synonyms / 2, len(used))  # each edge touches two entities
    s_a = np.repeat(used, s_counts)
    s_b = used[rng.integers(0, len(used), len(s_a))]
    keep = s_a != s_b
    s_a, s_b = s_a[keep], s_b[keep]
    s_score = np.round(rng.uniform(0.8, 1.0, len(s_a)), 4)

    pid = [f"p{i}" for i in range(passages)]
    eid = {int(e): f"e{int(e)}" for e in used}
    return GraphData(
        passages=[(p, "org") for p in pid],
        entities=list(eid.values()),
        facts=[(f"f{i}", eid[int(s)], eid[int(o)], pid[int(p)])
               for i, (s, o, p) in enumerate(zip(r_subject, r_object, r_passage, strict=True))],
        mentions=[(pid[int(p)], eid[int(e)]) for p, e in zip(m_passage, m_entity, strict=True)],
        synonyms=[(eid[int(x)], eid[int(y)], float(s)) for x, y, s in zip(s_a, s_b, s_score, strict=True)],
    )


# -- one query ---------------------------------------------------------------------


def reset_vector(view: GraphView, rng: np.random.Generator, shape: Shape) -> np.ndarray:
    """5 entity seeds at 1/passages (max-scaled as ``fuse_seeds`` does) + 0.05 x a random passage prior."""
    entities = np.flatnonzero(view.passage_count > 0)
    seeds = rng.choice(entities, size=min(shape.seeds, len(entities)), replace=False)
    weights = 1.0 / view.passage_count[seeds]
    reset = np.zeros(view.graph.vcount())
    reset[seeds] = weights / weights.max()
    reset[view.passage_vertices] += shape.passage_weight * minmax(rng.beta(2, 5, len(view.passage_vertices)))
    return reset


def top_overlap(a: np.ndarray, b: np.ndarray, k: int = 10) -> float:
    top_a = set(np.argsort(-a, kind="stable")[:k].tolist())
    top_b = set(np.argsort(-b, kind="stable")[:k].tolist())
    return len(top_a & top_b) / k


# -- one size ----------------------------------------------------------------------


def measure(passages: int, queries: int, shape: Shape, csr: bool, seed_scan_max: int) -> dict[str, Any]:
    with Stopwatch() as gen:
        data = synthetic_graph(passages, shape)
    with Stopwatch() as build:
        projection = GraphProjection.from_data(data)
        view = projection.view(None)
    n_facts, n_mentions, n_synonyms = len(data.facts), len(data.mentions), len(data.synonyms)
    graph = view.graph
    log(f"{passages} passages: {graph.vcount()} vertices, {graph.ecount()} edges "
        f"(generate {gen.seconds:.1f}s, build {build.seconds:.1f}s)")

    rng = np.random.default_rng(SEED + passages)
    resets = [reset_vector(view, rng, shape) for _ in range(queries + 1)]
    personalized_pagerank(graph, resets[-1], shape.damping)  # warm-up
    ppr_ms, readout_ms, ppr_vectors = [], [], []
    for reset in resets[:queries]:
        start = time.perf_counter()
        ppr = personalized_pagerank(graph, reset, shape.damping)
        middle = time.perf_counter()
        passage_mass(ppr, view.passage_vertices, view.incidence, "blend", 0.5)
        end = time.perf_counter()
        ppr_ms.append((middle - start) * 1000)
        readout_ms.append((end - middle) * 1000)
        if csr and len(ppr_vectors) < 5:
            ppr_vectors.append(ppr)

    row: dict[str, Any] = {
        "passages": passages, "vertices": graph.vcount(), "edges": graph.ecount(),
        "entities": graph.vcount() - passages, "relation_edges": n_facts, "mention_edges": n_mentions,
        "synonym_edges": n_synonyms, "generate_s": gen.seconds, "build_s": build.seconds,
        "queries": queries, "ppr_ms": percentiles(ppr_ms), "readout_ms": percentiles(readout_ms),
        "ppr_readout_ms": percentiles([a + b for a, b in zip(ppr_ms, readout_ms, strict=True)]),
    }
    row["ppr_1_thread_ms"] = measure_single_thread(view, resets[:queries], shape)
    if passages <= seed_scan_max:
        row["seed_stage_ms"] = measure_seed_stage(projection, view, data, min(queries, 20))
        log("  seed stage p50 (ms): " + ", ".join(f"{k} {v['p50']:.1f}" for k, v in row["seed_stage_ms"].items()))
    del data
    if csr:
        row["csr"] = measure_csr(view, resets[:queries], ppr_vectors, shape)
    row["peak_rss_mb"] = peak_rss_mb()
    single = row["ppr_1_thread_ms"]
    log(f"  PPR p50 {row['ppr_ms']['p50']:.1f} ms"
        + (f" (1 OpenMP thread: {single['p50']:.1f} ms)" if single else "")
        + f", read-out p50 {row['readout_ms']['p50']:.1f} ms"
        + (f"; CSR power iteration p50 {row['csr']['ppr_ms']['p50']:.1f} ms "
           f"(build {row['csr']['build_s']:.2f}s, top-10 agreement {row['csr']['top10_agreement']:.2f})"
           if csr else ""))
    return row


def unit_rows(rng: np.random.Generator, rows: int, dim: int) -> np.ndarray:
    matrix = rng.standard_normal((rows, dim), dtype=np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix


def measure_seed_stage(projection: GraphProjection, view: GraphView, data: GraphData, queries: int,
                       dim: int = 384) -> dict[str, Any]:
    """The engine's own seed-stage code (dense scan, fact scan, entity linking) on random unit vectors.

    ``Recaller._dense``, ``_facts`` and ``_links`` run against a stand-in for
    ``DerivedState`` that holds the synthetic graph and one vector per passage,
    fact and entity, as a real index of that size would.
    """
    rng = np.random.default_rng(SEED)
    state = DerivedState(revision=0, projection=projection, passages=VectorIndex(dim),
                         entities=VectorIndex(dim), facts=VectorIndex(dim))
    state.passages.add([p for p, _ in data.passages], [p for p, _ in data.passages],
                       unit_rows(rng, len(data.passages), dim))
    state.entities.add(list(data.entities), list(data.entities), unit_rows(rng, len(data.entities), dim))
    state.facts.add([f[0] for f in data.facts], [f[0] for f in data.facts], unit_rows(rng, len(data.facts), dim))
    state.fact_ends = [(s, o, p) for _, s, o, p in data.facts]
    recaller = Recaller(Settings(), embed=lambda texts: np.zeros((len(texts), dim)), query_phrases=lambda q: [])

    times: dict[str, list[float]] = {"dense": [], "facts": [], "links": []}
    for _ in range(queries):
        q, phrases = unit_rows(rng, 1, dim)[0], unit_rows(rng, 3, dim)
        for name, call in (("dense", lambda: recaller._dense(state, view, q)),
                           ("facts", lambda: recaller._facts(state, view, q)),
                           ("links", lambda: recaller._links(state, view, phrases))):
            start = time.perf_counter()
            call()
            times[name].append((time.perf_counter() - start) * 1000)
    stats = {name: percentiles(values) for name, values in times.items()}
    stats["seeds"] = percentiles([sum(parts) for parts in zip(*times.values(), strict=True)])
    return stats


def measure_single_thread(view: GraphView, resets: list[np.ndarray], shape: Shape) -> dict[str, float] | None:
    """PPR with igraph's vendored OpenMP runtime limited to one thread (None if not found)."""
    times = []
    with igraph_single_thread() as limited:
        if not limited:
            return None
        for reset in resets:
            start = time.perf_counter()
            personalized_pagerank(view.graph, reset, shape.damping)
            times.append((time.perf_counter() - start) * 1000)
    return percentiles(times)


def measure_csr(view: GraphView, resets: list[np.ndarray], reference: list[np.ndarray],
                shape: Shape) -> dict[str, Any]:
    with Stopwatch() as build:
        transition = Transition.of(view.graph)
    times, agreement, gap = [], [], []
    for i, reset in enumerate(resets):
        start = time.perf_counter()
        ppr = power_pagerank(transition, reset, shape.damping)
        times.append((time.perf_counter() - start) * 1000)
        if i < len(reference):
            own = ppr[view.passage_vertices]
            agreement.append(top_overlap(own, reference[i][view.passage_vertices]))
            gap.append(float(np.abs(ppr - reference[i]).sum()))
    return {"build_s": build.seconds, "ppr_ms": percentiles(times),
            "top10_agreement": float(np.mean(agreement)) if agreement else None,
            "l1_gap": float(np.max(gap)) if gap else None}


# -- fit, plot, report -------------------------------------------------------------


def growth_exponent(edges: Sequence[float], times: Sequence[float]) -> float | None:
    """Slope of log(time) against log(edges): 1.0 is linear growth."""
    if len(edges) < 2:
        return None
    slope, _ = np.polyfit(np.log(edges), np.log(times), 1)
    return float(slope)


def plot(rows: list[dict[str, Any]], path: Path, exponent: float | None) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    edges = [r["edges"] for r in rows]
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    ax.loglog(edges, [r["ppr_ms"]["p50"] for r in rows], "o-", label="PPR (igraph PRPACK) p50")
    ax.fill_between(edges, [r["ppr_ms"]["p50"] for r in rows], [r["ppr_ms"]["p95"] for r in rows], alpha=0.2,
                    label="PPR p50–p95")
    if all(r.get("ppr_1_thread_ms") for r in rows):
        ax.loglog(edges, [r["ppr_1_thread_ms"]["p50"] for r in rows], "o:", label="PPR, igraph OpenMP 1 thread p50")
    ax.loglog(edges, [r["readout_ms"]["p50"] for r in rows], "s--", label="read-out (blend) p50")
    if all("csr" in r for r in rows):
        ax.loglog(edges, [r["csr"]["ppr_ms"]["p50"] for r in rows], "^-.", label="PPR, cached CSR power iter. p50")
    ax.axhline(LIMIT_MS, color="grey", linestyle=":", label=f"{LIMIT_MS:.0f} ms budget")
    for r in rows:
        ax.annotate(f"{r['passages']:,} passages", (r["edges"], r["ppr_ms"]["p50"]), textcoords="offset points",
                    xytext=(4, -12), fontsize=7)
    title = "PPR time vs graph size"
    if exponent is not None:
        title += f" (PRPACK ~ edges^{exponent:.2f})"
    ax.set(xlabel="edges", ylabel="ms per query", title=title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def verdict(rows: list[dict[str, Any]]) -> str | None:
    at = next((r for r in rows if r["passages"] == 100_000), None)
    if at is None:
        return None
    p50 = at["ppr_ms"]["p50"]
    if p50 <= LIMIT_MS:
        return f"PPR p50 at 100k passages is {p50:.1f} ms: within the {LIMIT_MS:.0f} ms budget."
    text = f"PPR p50 at 100k passages is {p50:.1f} ms: OVER the {LIMIT_MS:.0f} ms budget."
    if "csr" in at:
        text += f" A cached-CSR power iteration takes {at['csr']['ppr_ms']['p50']:.1f} ms there."
    return text


def render(record: dict[str, Any]) -> str:
    rows = record["rows"]
    header = ["passages", "vertices", "edges", "build s", "PPR p50", "PPR p50, 1 thread", "PPR p95", "PPR p99",
              "read-out p50", "PPR+read-out p95"]
    has_csr = all("csr" in r for r in rows)
    if has_csr:
        header += ["CSR PPR p50", "CSR top-10 agree"]
    table = []
    for r in rows:
        line = [f"{r['passages']:,}", f"{r['vertices']:,}", f"{r['edges']:,}", f"{r['build_s']:.1f}",
                f"{r['ppr_ms']['p50']:.2f}",
                f"{r['ppr_1_thread_ms']['p50']:.2f}" if r.get("ppr_1_thread_ms") else "–",
                f"{r['ppr_ms']['p95']:.2f}", f"{r['ppr_ms']['p99']:.2f}",
                f"{r['readout_ms']['p50']:.2f}", f"{r['ppr_readout_ms']['p95']:.2f}"]
        if has_csr:
            line += [f"{r['csr']['ppr_ms']['p50']:.2f}", f"{r['csr']['top10_agreement']:.2f}"]
        table.append(line)
    parts = ["# Scale: PPR on synthetic graphs (times in ms per query)", "",
             f"Machine: {machine_line(record['machine'])}.", f"Shape: {record['shape']}.", "",
             markdown_table(header, table), ""]
    seeded = [r for r in rows if "seed_stage_ms" in r]
    if seeded:
        stages = ("dense", "facts", "links", "seeds")
        parts += ["Recall's seed stage at the same sizes (engine code, random 384-d vectors; p50 ms):", "",
                  markdown_table(["passages", "facts", *stages, "seeds + PPR + read-out"],
                                 [[f"{r['passages']:,}", f"{r['relation_edges']:,}",
                                   *(f"{r['seed_stage_ms'][s]['p50']:.1f}" for s in stages),
                                   f"{r['seed_stage_ms']['seeds']['p50'] + r['ppr_readout_ms']['p50']:.1f}"]
                                  for r in seeded]), ""]
    if record["exponent"] is not None:
        parts.append(f"PPR time grows as edges^{record['exponent']:.2f} (least-squares fit, log-log).")
    if record.get("single_thread_exponent") is not None:
        parts.append(f"With igraph's OpenMP at one thread, PPR grows as edges^{record['single_thread_exponent']:.2f}.")
    if record.get("csr_exponent") is not None:
        parts.append(f"Cached-CSR power iteration grows as edges^{record['csr_exponent']:.2f}.")
    if record.get("verdict"):
        parts.append(record["verdict"])
    if record.get("skipped"):
        parts.append(f"Skipped: {record['skipped']}.")
    parts += ["", "![PPR time vs edges](scale.png)", "", f"Command: `{record['command']}`"]
    return "\n".join(parts)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000, 300_000, 1_000_000],
                        help="passage counts; sizes whose graph would not fit in RAM are skipped")
    parser.add_argument("--queries", type=int, default=50, help="timed PPR calls per size (fewer at 1M)")
    parser.add_argument("--no-csr", dest="csr", action="store_false",
                        help="skip the cached-CSR power-iteration comparison")
    parser.add_argument("--seed-scan-max", type=int, default=100_000, metavar="PASSAGES",
                        help="also time the engine's seed stage (dense, fact and entity scans on random "
                             "vectors) up to this many passages")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--smoke", action="store_true", help="seconds-long check on tiny graphs (for CI)")
    args = parser.parse_args(argv)
    if args.smoke:
        args.sizes, args.queries = [200, 2_000], 5
        args.out = Path(tempfile.mkdtemp(prefix="hippo-bench-"))
    return args


def fits(passages: int, shape: Shape) -> bool:
    edges = passages * (shape.mentions + shape.relations + shape.synonyms * shape.entities_per_passage / 2)
    free = available_ram_gb()
    return free is None or edges * BYTES_PER_EDGE < free * 1024**3 * 0.8


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    shape = Shape()
    rows, skipped = [], []
    for passages in sorted(args.sizes):
        if not fits(passages, shape):
            skipped.append(f"{passages:,} passages (estimated graph does not fit in free RAM)")
            log(f"skipping {passages} passages: not enough free memory")
            continue
        queries = args.queries if passages <= 100_000 else max(5, args.queries // 5)
        rows.append(measure(passages, queries, shape, args.csr, args.seed_scan_max))
    exponent = growth_exponent([r["edges"] for r in rows], [r["ppr_ms"]["p50"] for r in rows])
    single = [r for r in rows if r.get("ppr_1_thread_ms")]
    single_exponent = growth_exponent([r["edges"] for r in single], [r["ppr_1_thread_ms"]["p50"] for r in single]) \
        if len(single) == len(rows) else None
    csr_exponent = growth_exponent([r["edges"] for r in rows], [r["csr"]["ppr_ms"]["p50"] for r in rows]) \
        if args.csr and rows else None
    record = {
        "shape": asdict(shape), "seed": SEED, "rows": rows, "exponent": exponent,
        "single_thread_exponent": single_exponent, "csr_exponent": csr_exponent, "verdict": verdict(rows),
        "skipped": "; ".join(skipped) or None, "machine": machine_info(),
        "command": "python benchmarks/scale.py " + " ".join(sys.argv[1:] if argv is None else argv),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    plot(rows, args.out / "scale.png", exponent)
    markdown = render(record)
    json_path, md_path = write_outputs("scale", record, markdown, args.out)
    print(markdown)
    if exponent is not None:
        print(f"\nfitted growth exponent (PPR p50 vs edges): {exponent:.2f}"
              + (f"; one OpenMP thread: {single_exponent:.2f}" if single_exponent is not None else ""))
    if record["verdict"]:
        print(record["verdict"])
    log(f"wrote {json_path}, {md_path} and {args.out / 'scale.png'}")
    return record


if __name__ == "__main__":
    main()
