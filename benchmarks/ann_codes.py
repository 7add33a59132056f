"""What a vector costs in memory and what it finds: HNSW graphs over other codes than hippo's (issue 13).

At 1M passages the mapped vector state was ~21 GB (``README``, "Scale"): per fact, 8-bit codes and
32 links a node in the HNSW graph (~660 B) and a float16 copy for exact re-ranking (768 B). The
12 GB target needs fewer bytes a vector in what every search touches; stop 55 switched the engine to
4-bit codes and 16 links (336 B), built at efConstruction 200, from this study. It builds, over the
same vectors, graphs that differ only in their codes or links, and measures what each holds a vector
and what it finds: recall@10 against the exact top 10 after re-ranking ``rerank x k`` candidates
exactly (as ``hippo.memory.shards.HnswShard`` does, so the float copy is read for the shortlist
only), at several walk widths, for the queries the engine calibrates on
(``hippo.memory.calibration.calibration_queries``: noisy copies, question-like blends, near copies).

Vectors: the fact vectors of a store's saved derived state (``<store>.db.hippo/vectors-fact-*.bin``,
raw float16 or float32 rows): real MiniLM embeddings of HippoRAG's 2Wiki facts, and the synthetic
scale store's clustered ones. ``--questions N``: the queries are instead 1,000 questions of the
synthetic store of N passages (``benchmarks/synthetic.py``), what its recalls search the facts with
(stop 60: which graph holds recall on the 100k store's 1M facts).

    python benchmarks/ann_codes.py --vectors results/cache/hipporag_2wiki_tune500-spacy-all-MiniLM-L6-v2.db.hippo \\
        --vectors /work/cache/scale/scale-100000.db.hippo --rows 300000
    python benchmarks/ann_codes.py --vectors /work/cache/scale/scale-100000.db.hippo --questions 100000 \\
        --variant "sq4, 16 links, built at 200 (hippo below 500k rows)" --variant "sq8, 16 links, built at 200" \\
        --variant "sq4, 32 links, built at 200 (hippo from 500k rows)" --widths 128 256 432 648 1024 --tag links
"""

from __future__ import annotations

import argparse
import shlex
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import faiss
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import log, machine_info, machine_line, markdown_table, write_outputs  # noqa: E402
from hippo.memory.ann import AnnSettings  # noqa: E402
from hippo.memory.calibration import calibration_queries  # noqa: E402
from hippo.memory.shards import CODES  # noqa: E402

DIM = 384
WIDTHS = (64, 128, 256, 512)
K = 10
# name -> (codes, links, efConstruction): hippo's graphs first, then the one they replaced (stop 55)
VARIANTS: dict[str, tuple[str, int, int]] = {
    "sq4, 16 links, built at 200 (hippo below 500k rows)": ("SQ4", 16, 200),
    "sq4, 32 links, built at 200 (hippo from 500k rows)": ("SQ4", 32, 200),
    "sq8, 16 links, built at 200": ("SQ8", 16, 200),
    "sq8, 32 links, built at 100 (hippo to stop 54)": ("SQ8", 32, 100),
    "sq8, 16 links": ("SQ8", 16, 100),
    "sq4, 32 links": ("SQ4", 32, 100),
    "sq4, 16 links": ("SQ4", 16, 100),
    "pq48, 32 links": ("PQ48", 32, 100),
}
# Not among them: 96-byte product codes, which faiss's HNSW builds slowly: on 20k 2Wiki facts a build
# took 52.8 s (sq8: 3.3 s) and a search 0.37 ms at ef 128 (0.20) for recall@10 0.991 (0.998).


def fact_vectors(folder: Path, rows: int | None) -> np.ndarray:
    """The first ``rows`` fact vectors saved beside a store, normalized float32."""
    [path] = sorted(folder.glob("vectors-fact-*.bin"))
    dtype = np.float16 if "float16" in path.name else np.float32
    found = np.memmap(path, dtype=dtype, mode="r").reshape(-1, DIM)
    vectors = np.asarray(found[:rows] if rows else found, dtype=np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def graph(codes: str, links: int, width: int, train: np.ndarray) -> faiss.Index:
    if codes.startswith("SQ"):
        index = faiss.IndexHNSWSQ(DIM, CODES[int(codes[2:])], links, faiss.METRIC_INNER_PRODUCT)  # the engine's
    else:  # product quantization in faiss's HNSW is L2 only: on unit vectors it orders as inner product does
        index = faiss.IndexHNSWPQ(DIM, int(codes[2:]), links, 8)
    index.hnsw.efConstruction = width
    index.train(train)
    return index


def shortlist(settings: AnnSettings) -> int:
    """Candidates a search for ``K`` re-scores exactly (``HnswShard._shortlist``)."""
    return max(settings.min_rerank, settings.rerank_margin + settings.rerank * K)


def questions(size: int, count: int = 1_000) -> np.ndarray:
    """``count`` questions of the synthetic store of ``size`` passages, embedded as its recalls embed them."""
    from benchmarks.synthetic import SyntheticCorpus, SyntheticEmbedder

    corpus = SyntheticCorpus(size)
    picked = np.random.default_rng(7).integers(size, size=count)
    return np.asarray(SyntheticEmbedder().encode([corpus.query(int(i)) for i in picked]), dtype=np.float32)


def study(name: str, vectors: np.ndarray, settings: AnnSettings, variants: dict[str, tuple[str, int, int]] = VARIANTS,
          widths: tuple[int, ...] = WIDTHS, queries: np.ndarray | None = None) -> list[dict[str, Any]]:
    """``queries``: None for the engine's calibration queries drawn from ``vectors``."""
    rng = np.random.default_rng(len(vectors))
    labels = np.arange(len(vectors))
    if queries is None:
        queries = np.concatenate(calibration_queries(labels, lambda at: vectors[at], settings, rng))
    exact = np.concatenate([np.argpartition(-(part @ vectors.T), K, axis=1)[:, :K]  # as sets: order does not
                            for part in np.array_split(queries, max(1, len(queries) // 100))])  # matter
    train = vectors[np.sort(rng.choice(len(vectors), min(len(vectors), 65_536), replace=False))]
    rows = []
    for variant, (codes, links, width) in variants.items():
        clock = time.perf_counter()
        index = graph(codes, links, width, train)
        index.add(vectors)
        built = time.perf_counter() - clock
        size = len(faiss.serialize_index(index))
        threads = faiss.omp_get_max_threads()
        for ef in widths:
            index.hnsw.efSearch = ef
            faiss.omp_set_num_threads(1)  # one query a thread, as a recall's searches run
            clock = time.perf_counter()
            _, found = index.search(queries, shortlist(settings))
            scores = np.einsum("qd,qkd->qk", queries, vectors[np.maximum(found, 0)])
            scores[found < 0] = -np.inf
            top = np.take_along_axis(found, np.argsort(-scores, axis=1)[:, :K], axis=1)
            took = (time.perf_counter() - clock) / len(queries)
            faiss.omp_set_num_threads(threads)  # the builds use every core
            pairs = zip(top.tolist(), exact.tolist(), strict=True)
            share = float(np.mean([len(set(a) & set(b)) / K for a, b in pairs]))
            rows.append({"vectors": name, "rows": len(vectors), "variant": variant, "graph_bytes_per_vector":
                         round(size / len(vectors), 1), "float16_bytes_per_vector": 2 * DIM, "build_s": round(built, 1),
                         "ef": ef, "recall_at_10": round(share, 4), "search_ms": round(1000 * took, 3)})
            log(f"{name} {variant} ef {ef}: {share:.4f}, {1000 * took:.2f} ms, {size / len(vectors):.0f} B a vector")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vectors", type=Path, action="append", default=[],
                        help="a store's derived-state folder (<store>.db.hippo) holding vectors-fact-*.bin")
    parser.add_argument("--rows", type=int, default=None, help="the first N fact vectors of each")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "results")
    parser.add_argument("--questions", type=int, metavar="N", help="query with 1,000 questions of the synthetic "
                        "store of N passages (its facts' vectors as --vectors), not the calibration queries")
    parser.add_argument("--variant", action="append", choices=list(VARIANTS), help="the graphs to build (default: all)")
    parser.add_argument("--widths", type=int, nargs="+", default=list(WIDTHS), help="walk widths (ef) measured")
    parser.add_argument("--tag", help="write ann_codes-<tag>.json / .md")
    parser.add_argument("--smoke", action="store_true", help="seconds: 3,000 random vectors, two graphs, into a "
                        "temporary folder")
    args = parser.parse_args()
    settings = AnnSettings()
    variants = {name: VARIANTS[name] for name in args.variant} if args.variant else VARIANTS
    asked = questions(args.questions) if args.questions else None
    rows = []
    if args.smoke:
        vectors = np.random.default_rng(0).standard_normal((3_000, DIM)).astype(np.float32)
        rows = study("random", vectors / np.linalg.norm(vectors, axis=1, keepdims=True), settings,
                     dict(list(VARIANTS.items())[:2]), (64,))
        args.out = Path(tempfile.mkdtemp(prefix="hippo-ann-codes-"))
    elif not args.vectors:
        parser.error("--vectors is required (or --smoke)")
    for folder in args.vectors:
        rows += study(folder.name.removesuffix(".db.hippo"), fact_vectors(folder, args.rows), settings, variants,
                      tuple(args.widths), asked)
    info = machine_info()
    widths = [f"recall@10 / ms at ef {ef}" for ef in sorted({r["ef"] for r in rows})]
    header = ["vectors", "rows", "graph", "graph B a vector", "build s", *widths]
    table = []
    for (name, variant) in dict.fromkeys((r["vectors"], r["variant"]) for r in rows):
        mine = [r for r in rows if r["vectors"] == name and r["variant"] == variant]
        table.append([name, mine[0]["rows"], variant, mine[0]["graph_bytes_per_vector"], mine[0]["build_s"],
                      *(f"{r['recall_at_10']:.3f} / {r['search_ms']:.2f}" for r in mine)])
    markdown = "\n".join([
        "# HNSW codes and links: bytes a vector against recall (issue 13)", "",
        "`python benchmarks/ann_codes.py` (its docstring says what and why). Every variant re-ranks "
        f"{shortlist(settings)} candidates exactly from the vectors, for the "
        f"top {K}; the float16 copy those come from adds {2 * DIM} B a vector, read for the shortlist only. "
        "Search: one thread, per query. Queries: "
        + (f"1,000 questions of the synthetic {args.questions:,}-passage store." if args.questions
           else "the engine's calibration queries (noisy copies, blends, near copies)."), "",
        "Command: `python benchmarks/ann_codes.py " + shlex.join(sys.argv[1:]) + "`", "",
        markdown_table(header, table), "", machine_line(info), ""])
    print(markdown)
    write_outputs(f"ann_codes-{args.tag}" if args.tag else "ann_codes", {"rows": rows, "machine": info}, markdown,
                  args.out)


if __name__ == "__main__":
    main()
