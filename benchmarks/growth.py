"""Growth: how recall's cost grows with the corpus, measured on several stores in one process, in turns.

``benchmarks/scale.py`` measures each size in its own fresh process, minutes apart. On a shared 2-core
host two such runs of the same store differed by 1.5x (``results/scale-stop62-graphs.md``, A/B rounds
13.5 and 20.6 ms), which is as large as the growth being measured. Here every store built by
``scale.py`` is opened in one process, and rounds of ``--block`` questions go to each store in turn
(the order rotating each round), so every size sees the same host weather. Per size it reports recall
p50/p95 without query embedding, CPU p50, the stages (seeds, PPR, read-out), the PPR's work (edges
read and vertices pushed, summed over the recall's walks), the dense and BM25 baselines, and each
against the smallest size: the ratio of medians, and the spread of that ratio over the rounds.
It is fair only while every store's files fit in the page cache together: the 1M store at 844k
passages beside the 100k and 230k ones slowed all three on a 23.5 GB machine (the 100k store to 38 ms,
17 alone; ``results/growth-stop66.md``); past that, run one size a process, in turns.

    python benchmarks/growth.py --sizes 100000 230000 1000000
    python benchmarks/growth.py --smoke   # two tiny stores built here, seconds

Writes ``growth.json`` and ``growth.md`` to ``--out`` (default ``results/``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

try:
    from benchmarks.common import RESULTS, log, machine_info, machine_line, markdown_table
    from benchmarks.scale import STORE_DIR, _memory, _read_ahead_done, _rss_parts, build
    from benchmarks.synthetic import SyntheticCorpus, query_phrases
except ImportError:  # run as ``python benchmarks/growth.py``
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from benchmarks.common import RESULTS, log, machine_info, machine_line, markdown_table
    from benchmarks.scale import STORE_DIR, _memory, _read_ahead_done, _rss_parts, build
    from benchmarks.synthetic import SyntheticCorpus, query_phrases

STAGES = ("total", "seeds", "ppr", "readout", "cpu", "edges", "pushes", "dense", "bm25",
          "passage_search", "fact_search", "entity_search")


class WalkWork:
    """Counts the PPR's work of each recall: every walk's edges read and vertices pushed."""

    def __init__(self) -> None:
        from hippo.memory import spread

        self.edges = self.pushes = 0
        original = spread.Walk.of.__func__

        def counted(cls: type, *args: Any, **kwargs: Any) -> Any:
            walk = original(cls, *args, **kwargs)
            self.edges += walk.ppr.edges
            self.pushes += walk.ppr.pushes
            return walk

        spread.Walk.of = classmethod(counted)

    def take(self) -> tuple[int, int]:
        done, self.edges, self.pushes = (self.edges, self.pushes), 0, 0
        return done


def _ask(memory: Any, query: str, work: WalkWork, samples: dict[str, list[float]]) -> None:
    work.take()
    cpu = time.process_time()
    timings = memory.recall(query, n=5, k=10).timings
    samples["cpu"].append((time.process_time() - cpu) * 1000)
    samples["total"].append((timings["total"] - timings.get("embed", 0.0)) * 1000)
    for stage in ("seeds", "ppr", "readout"):
        samples[stage].append(timings.get(stage, 0.0) * 1000)
    edges, pushes = work.take()
    samples["edges"].append(edges)
    samples["pushes"].append(pushes)
    for mode in ("dense", "bm25"):
        start = time.perf_counter()
        memory.retrieve(query, k=10, mode=mode)
        samples[mode].append((time.perf_counter() - start) * 1000)
    # The seed stage's searches one at a time on this thread, as recall asks them (its k, its queries):
    # recall runs them beside each other and BM25, so their sum is not its seed time, but their growth is.
    state, settings = memory.engine.state, memory.settings
    vectors = memory.embedder.encode([query, *query_phrases(query)])
    for kind, index, queries, k in (("passage", state.passages, vectors[:1], settings.passage_prior_top),
                                    ("fact", state.facts, vectors[:1], settings.fact_top_k * 8),
                                    ("entity", state.entities, vectors[1:], settings.link_top_k)):
        start = time.perf_counter()
        index.search(queries, k)
        samples[f"{kind}_search"].append((time.perf_counter() - start) * 1000)


def measure(sizes: Sequence[int], store_dir: Path, rounds: int, block: int) -> dict[str, Any]:
    from hippo.extract.spacy import load_pipeline

    load_pipeline()
    work = WalkWork()
    stores: dict[int, Any] = {}
    asked: dict[int, list[str]] = {}
    opened: dict[int, dict[str, Any]] = {}
    for size in sizes:
        clock = time.perf_counter()
        memory = _memory(store_dir / f"scale-{size}.db")
        opened[size] = {"open_s": time.perf_counter() - clock, "outcome": memory.engine.cache.outcome}
        stored = memory.stats().passages
        corpus, rng = SyntheticCorpus(size), np.random.default_rng(size)
        asked[size] = [corpus.query(int(i)) for i in rng.integers(min(size, stored), size=rounds * block + 10)]
        _read_ahead_done()
        for q in asked[size][:10]:  # warm-up
            memory.recall(q)
        stores[size] = memory
        log(f"{size:,}: {stored:,} passages open ({opened[size]['outcome']}, {opened[size]['open_s']:.1f} s)")
    samples = {size: {stage: [] for stage in STAGES} for size in sizes}
    per_round: dict[int, list[float]] = {size: [] for size in sizes}
    for r in range(rounds):
        turn = list(sizes[r % len(sizes):]) + list(sizes[: r % len(sizes)])
        for size in turn:
            first = len(samples[size]["total"])
            for q in asked[size][10 + r * block : 10 + (r + 1) * block]:
                _ask(stores[size], q, work, samples[size])
            per_round[size].append(float(np.median(samples[size]["total"][first:])))
        log(f"round {r + 1}/{rounds}: " + ", ".join(f"{s:,} {per_round[s][-1]:.1f} ms" for s in sizes))
    smallest = sizes[0]
    rows = []
    for size in sizes:
        p = stores[size].engine.state.projection
        median = {stage: float(np.median(v)) for stage, v in samples[size].items()}
        ratios = np.array(per_round[size]) / np.array(per_round[smallest])
        rows.append({
            "size": size, "passages": p.passage_total, "edges": p.edges.size // 2, "facts": len(p.fact_ids),
            "recall_p50_ms": median["total"], "recall_p95_ms": float(np.percentile(samples[size]["total"], 95)),
            "p50_ms": median, **opened[size], "fact_graphs": _graphs(stores[size].engine.state.facts),
            "growth": {stage: median[stage] / max(float(np.median(samples[smallest][stage])), 1e-9)
                       for stage in STAGES},
            "round_ratio": {"median": float(np.median(ratios)), "min": float(ratios.min()),
                            "max": float(ratios.max())},
        })
    rss = _rss_parts()
    for memory in stores.values():
        memory.close()
    return {"rows": rows, "rounds": rounds, "block": block, "rss_all_open": rss, "machine": machine_info(),
            "load_average": [round(x, 2) for x in os.getloadavg()]}


def _graphs(index: Any) -> int:
    """HNSW graphs (or exact shards) a search of this index walks."""
    return sum(len(getattr(shard, "graphs", [shard])) for shard in index.shards.values())


def render(result: dict[str, Any], command: str) -> str:
    rows = result["rows"]
    table = markdown_table(
        ["passages", "edges", "recall p50 / p95 ms", "CPU p50", "seeds / PPR / read-out p50",
         "PPR edges read / pushes p50", "dense / BM25 p50", f"p50 vs {rows[0]['passages']:,}",
         "per-round ratio (min–max)", "seeds / PPR / edges vs smallest",
         "searches alone: passages / facts (graphs) / entities ms"],
        [[f"{r['passages']:,}", f"{r['edges']:,}", f"{r['recall_p50_ms']:.1f} / {r['recall_p95_ms']:.1f}",
          f"{r['p50_ms']['cpu']:.1f}",
          f"{r['p50_ms']['seeds']:.1f} / {r['p50_ms']['ppr']:.1f} / {r['p50_ms']['readout']:.1f}",
          f"{r['p50_ms']['edges']:,.0f} / {r['p50_ms']['pushes']:,.0f}",
          f"{r['p50_ms']['dense']:.1f} / {r['p50_ms']['bm25']:.1f}", f"{r['growth']['total']:.2f}x",
          f"{r['round_ratio']['median']:.2f} ({r['round_ratio']['min']:.2f}–{r['round_ratio']['max']:.2f})",
          f"{r['growth']['seeds']:.2f} / {r['growth']['ppr']:.2f} / {r['growth']['edges']:.2f}",
          f"{r['p50_ms']['passage_search']:.1f} / {r['p50_ms']['fact_search']:.1f} ({r['fact_graphs']}) / "
          f"{r['p50_ms']['entity_search']:.1f}"] for r in rows])
    return "\n".join([
        "# Growth: recall's cost against the corpus, all sizes in one process, in turns", "",
        machine_line(result["machine"]) + ".", "",
        f"{result['rounds']} rounds of {result['block']} questions per store, the stores taking turns. "
        "Recall latency excludes query embedding; each question is also retrieved dense and BM25 (the "
        "baselines), right after its recall.", "", table, "",
        f"RSS with every store open: {rss_line(result['rss_all_open'])}.", "", f"Command: `{command}`"])


def rss_line(rss: dict[str, float]) -> str:
    return f"{rss['rss_mb']:,.0f} MB ({rss['rss_anon_mb']:,.0f} own + {rss['rss_file_mb']:,.0f} mapped)"


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", help="stores built by scale.py")
    parser.add_argument("--store-dir", type=Path, default=STORE_DIR)
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--block", type=int, default=25)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--smoke", action="store_true", help="two tiny stores built in a scratch folder (CI)")
    args = parser.parse_args(argv)
    if args.smoke:
        args.store_dir = args.out = Path(tempfile.mkdtemp(prefix="hippo-growth-"))
        args.sizes, args.rounds, args.block = [200, 400], 2, 4
        for size in args.sizes:
            build(size, args.store_dir)
    elif not args.sizes:
        parser.error("--sizes is required (or --smoke)")
    result = measure(sorted(args.sizes), args.store_dir, args.rounds, args.block)
    command = "python benchmarks/growth.py " + " ".join(sys.argv[1:] if argv is None else argv)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "growth.json").write_text(json.dumps(result, indent=2) + "\n")
    markdown = render(result, command)
    (args.out / "growth.md").write_text(markdown + "\n")
    print(markdown)
    return result


if __name__ == "__main__":
    main()
