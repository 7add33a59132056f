"""Where a store-side push wave's read spends the server's time (``read_neighbours.cypher``).

Store-side recall (``HIPPO_NEO4J_READ=store``) reads each push wave's edges in one statement; at
100k passages that read is most of a recall. This benchmark records the frontiers of ``--queries``
store-side recalls of a synthetic scale store (``benchmarks/scale.py``, bulk-loaded into Neo4j),
then replays every recorded frontier, one statement each, in turn with:

- ``shipped``: ``hippo/cypher/read_neighbours.cypher`` as recall runs it;
- ``one counter``: each target's strength read from one property instead of three;
- ``ids``: the same traversal returning each target's id, no strength (``benchmarks/cypher/``);
- ``element ids``: the same traversal returning element ids: no property of a target read;
- ``traversal``: the relationships counted: finding the frontier and walking its edges alone.

The variants run interleaved, ``--rounds`` times; the table gives per recall the median over the
rounds of the client's wall time and the server's (``result_available_after`` +
``result_consumed_after``). The gaps say what each part of the read costs: what reading the
targets' strengths, their ids and the traversal itself take.

    python benchmarks/frontier_reads.py --size 100000 --store bolt://neo4j:pass@127.0.0.1:7732
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

from benchmarks.common import log, machine_info, machine_line, markdown_table, write_outputs  # noqa: E402

HERE = Path(__file__).resolve().parent
VARIANTS = {"one counter": "frontier_one_counter", "ids": "frontier_ids", "element ids": "frontier_element_ids",
            "traversal": "frontier_count"}


def _statement(name: str) -> str:
    from hippo.store.cypher import statement_at

    return statement_at(HERE / "cypher" / f"{name}.cypher")


def record(size: int, store: str, queries: int, warm: int = 10) -> tuple[list[dict[str, Any]], Any]:
    """The frontiers (one per push wave) of ``queries`` store-side recalls after ``warm``, and the store."""
    import hippo
    from benchmarks.synthetic import SyntheticCorpus, SyntheticEmbedder, SyntheticExtractor, query_phrases
    from hippo.extract.spacy import load_pipeline
    from hippo.store.neo4j import Neo4jStore
    from hippo.store.neo4j.reader import Neo4jReader

    load_pipeline()
    neo = Neo4jStore.from_url(store)
    memory = hippo.Memory(neo, settings=hippo.Settings(neo4j_read="store"), embedder=SyntheticEmbedder(),
                          extractor=SyntheticExtractor())
    memory._recaller._phrases = query_phrases  # noqa: SLF001 - spaCy cannot read synthetic names
    corpus = SyntheticCorpus(size)
    rng = np.random.default_rng(size)
    asked = [corpus.query(int(i)) for i in rng.integers(size, size=queries + warm)]
    for q in asked[:warm]:
        memory.recall(q)
    frontiers: list[dict[str, Any]] = []
    shipped = Neo4jReader.neighbours

    def recording(reader: Any, passages: list[str], entities: list[str], **weights: Any) -> Any:
        frontiers.append({"passages": list(passages), "entities": list(entities), "spaces": reader.spaces,
                          "mention_weight": weights.get("mention_weight", 1.0),
                          "relation_weight": weights.get("relation_weight", 1.0),
                          "everything": bool(weights.get("everything")) and reader.spaces is None})
        return shipped(reader, passages, entities, **weights)

    Neo4jReader.neighbours = recording
    try:
        for q in asked[warm:]:
            memory.recall(q, n=5, k=10)
    finally:
        Neo4jReader.neighbours = shipped
    return frontiers, (memory, neo)


def replay(session: Any, statement: str, frontiers: list[dict[str, Any]]) -> tuple[float, float]:
    """Seconds of client wall time and of server time to read every frontier once."""
    server, start = 0.0, time.perf_counter()
    for params in frontiers:
        result = session.run(statement, **params)
        result.single()
        summary = result.consume()
        server += ((summary.result_available_after or 0) + (summary.result_consumed_after or 0)) / 1000
    return time.perf_counter() - start, server


def run(size: int, store: str, queries: int, rounds: int) -> dict[str, Any]:
    from hippo.store.cypher import cypher

    frontiers, (memory, neo) = record(size, store, queries)
    statements = {"shipped": cypher("read_neighbours"), **{k: _statement(v) for k, v in VARIANTS.items()}}
    timings: dict[str, list[tuple[float, float]]] = {name: [] for name in statements}
    with neo.db.session() as session:
        counted = [session.run(_statement("frontier_distinct"), **f).single() for f in frontiers]
        edges, targets = sum(c["edges"] for c in counted), sum(c["targets"] for c in counted)
        for statement in statements.values():  # each planned once before it is timed
            replay(session, statement, frontiers[:5])
        for turn in range(rounds):
            names = list(statements) if turn % 2 == 0 else list(statements)[::-1]  # neither always first
            for name in names:
                timings[name].append(replay(session, statements[name], frontiers))
    memory.close()
    rows = [{"variant": name, "wall_ms_per_recall": 1000 * float(np.median([w for w, _ in t])) / queries,
             "server_ms_per_recall": 1000 * float(np.median([s for _, s in t])) / queries,
             "rounds": [[round(1000 * w / queries, 1), round(1000 * s / queries, 1)] for w, s in t]}
            for name, t in timings.items()]
    everything = float(np.mean([f["everything"] for f in frontiers]))
    return {"size": size, "queries": queries, "frontiers_per_recall": len(frontiers) / queries,
            "edges_per_recall": edges / queries,
            "edges_per_target": edges / max(targets, 1), "everything_share": everything, "variants": rows,
            "machine": machine_info()}


def render(result: dict[str, Any], command: str) -> str:
    shipped = result["variants"][0]["server_ms_per_recall"]
    table = markdown_table(
        ["statement", "wall ms / recall", "server ms / recall", "server vs shipped"],
        [[r["variant"], f"{r['wall_ms_per_recall']:.1f}", f"{r['server_ms_per_recall']:.1f}",
          f"{r['server_ms_per_recall'] / shipped:.2f}"] for r in result["variants"]])
    return (f"# Store-side frontier reads: where the server's time goes\n\n{machine_line(result['machine'])}\n\n"
            f"{result['size']:,} passages, {result['queries']} recalls: {result['frontiers_per_recall']:.1f} "
            f"frontier reads and {result['edges_per_recall']:,.0f} edges a recall ({result['edges_per_target']:.2f} "
            f"edges a distinct target within a statement), each frontier read in one "
            f"statement, sequentially (recall splits a wide one in two side by side); the variants skip visibility, "
            f"as the shipped statement does when the reader sees every space and nothing is forgotten (here "
            f"{result['everything_share']:.0%} of the reads).\n\n{table}\n\n"
            f"Command: `{command}`\n")


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--store", required=True, help="bolt:// URL of the Neo4j holding the scale store")
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None, help="directory (default: results/)")
    args = parser.parse_args(argv)
    result = run(args.size, args.store, args.queries, args.rounds)
    command = "python benchmarks/frontier_reads.py " + " ".join(
        a if "@" not in a else a.split("//")[0] + "//…@" + a.split("@")[-1] for a in (argv or sys.argv[1:]))
    text = render(result, command)
    print(text)
    paths = write_outputs("frontier_reads", result, text, **({"out_dir": args.out} if args.out else {}))
    log(f"wrote {paths[0]} and {paths[1]}")
    return result


if __name__ == "__main__":
    main()
