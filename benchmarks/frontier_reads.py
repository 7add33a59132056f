"""Where a store-side push wave's read spends the server's time (``read_neighbours.cypher``).

Store-side recall (``HIPPO_NEO4J_READ=store``) reads each push wave's edges in one statement; at
100k passages that read is most of a recall. This benchmark records the frontiers of ``--queries``
store-side recalls of a synthetic scale store (``benchmarks/scale.py``, bulk-loaded into Neo4j),
after ``--warm`` recalls, and the targets those recalls had to name (``read_keyed_nodes.cypher``),
then replays every recorded read, one statement each, in turn with:

- ``shipped``: ``hippo/cypher/read_neighbours.cypher`` as recall runs it (targets as node ids);
- ``shipped + naming``: that, and the reads of the targets the reader's cache did not know yet;
- ``strengths`` (stop 48's statement): each target's record id and strength over every edge read
  with the edges, so no second read (``benchmarks/cypher/``);
- ``ids``: the same traversal returning each target's id, no strength;
- ``traversal``: the relationships counted: finding the frontier and walking its edges alone;
- ``nested`` (stop 52's statement): the shipped traversal answering five lists per owner (its
  targets by kind, synonyms as pairs) and echoing its record id, where the shipped one answers one flat
  list of numbers per owner (``hippo.store.neo4j.frontier``).

The variants run interleaved, ``--rounds`` times; the table gives per recall the median over the
rounds of the client's wall time, its CPU time (packing the parameters, decoding the answer) and the
server's time (``result_available_after`` + ``result_consumed_after``). The gaps say what each part of
the read costs: what reading the targets' strengths, their ids and the traversal itself take, and what
the answer's shape costs the client.

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
VARIANTS = {"strengths": "frontier_strengths", "ids": "frontier_ids", "traversal": "frontier_count",
            "nested": "frontier_nested"}


def _statement(name: str) -> str:
    from hippo.store.cypher import statement_at

    return statement_at(HERE / "cypher" / f"{name}.cypher")


def record(size: int, store: str, queries: int, warm: int = 10) -> tuple[list[dict[str, Any]], list[dict[str, Any]],
                                                                        Any]:
    """The frontiers (one per push wave) of ``queries`` store-side recalls after ``warm``, the namings of
    their targets, and the store."""
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
    namings: list[dict[str, Any]] = []
    owner_edges: list[int] = []  # per owner read: its edges
    shipped, naming = Neo4jReader.neighbours, Neo4jReader.keyed
    weights = {"mention_weight": memory.settings.mention_weight, "relation_weight": memory.settings.relation_weight}

    def recording(reader: Any, passages: list[Any], entities: list[Any], everything: bool = False) -> Any:
        # Replayed by record id (the variants take no node ids): the owners' index seeks included.
        frontiers.append({"passages": passages.records.tolist(), "entities": entities.records.tolist(),
                          "passage_nodes": [], "entity_nodes": [], "spaces": reader.spaces,
                          "everything": everything and reader.spaces is None, **weights})
        found = shipped(reader, passages, entities, everything=everything)
        owner_edges.extend(found.counts.sum(axis=1).tolist())
        return found

    def named(reader: Any, keys: list[str], **given: Any) -> Any:
        namings.append({"keys": list(keys), "spaces": reader.spaces, **given})
        return naming(reader, keys, **given)

    Neo4jReader.neighbours, Neo4jReader.keyed = recording, named  # type: ignore[method-assign]
    try:
        for q in asked[warm:]:
            memory.recall(q, n=5, k=10)
    finally:
        Neo4jReader.neighbours, Neo4jReader.keyed = shipped, naming  # type: ignore[method-assign]
    return frontiers, namings, owner_edges, (memory, neo)


def replay(session: Any, statement: str, frontiers: list[dict[str, Any]]) -> tuple[float, float, float]:
    """Seconds of client wall time, of client CPU (this thread's) and of server time to read every
    frontier once."""
    server, start, cpu = 0.0, time.perf_counter(), time.thread_time()
    for params in frontiers:
        result = session.run(statement, **params)
        result.single()
        summary = result.consume()
        server += ((summary.result_available_after or 0) + (summary.result_consumed_after or 0)) / 1000
    return time.perf_counter() - start, time.thread_time() - cpu, server


def run(size: int, store: str, queries: int, rounds: int, warm: int) -> dict[str, Any]:
    from hippo.store.cypher import cypher
    from hippo.store.neo4j.frontier import Owners

    frontiers, namings, owner_edges, (memory, neo) = record(size, store, queries, warm)
    neighbours = cypher("read_neighbours")
    keyed = [{**f, **Owners.of(range(len(f["passages"])), f["passages"], [-1] * len(f["passages"])).params("passage"),
              **Owners.of(range(len(f["passages"]), len(f["passages"]) + len(f["entities"])), f["entities"],
                          [-1] * len(f["entities"])).params("entity")} for f in frontiers]
    reads = {"shipped": [(neighbours, keyed)],
             "shipped + naming": [(neighbours, keyed), (cypher("read_keyed_nodes"), namings)],
             **{k: [(_statement(v), frontiers)] for k, v in VARIANTS.items()}}
    timings: dict[str, list[tuple[float, float, float]]] = {name: [] for name in reads}
    with neo.db.session() as session:
        counted = [session.run(_statement("frontier_distinct"), **f).single() for f in frontiers]
        edges, targets = sum(c["edges"] for c in counted), sum(c["targets"] for c in counted)
        for parts in reads.values():  # each planned once before it is timed
            for statement, params in parts:
                replay(session, statement, params[:5])
        for turn in range(rounds):
            names = list(reads) if turn % 2 == 0 else list(reads)[::-1]  # neither always first
            for name in names:
                spent = [replay(session, statement, params) for statement, params in reads[name]]
                timings[name].append(tuple(sum(part) for part in zip(*spent, strict=True)))  # type: ignore[arg-type]
    memory.close()

    def per_recall(values: list[float]) -> float:
        return 1000 * float(np.median(values)) / queries

    rows = [{"variant": name, "wall_ms_per_recall": per_recall([w for w, _, _ in t]),
             "client_cpu_ms_per_recall": per_recall([c for _, c, _ in t]),
             "server_ms_per_recall": per_recall([s for _, _, s in t]),
             "rounds": [[round(1000 * x / queries, 1) for x in one] for one in t]}
            for name, t in timings.items()]
    everything = float(np.mean([f["everything"] for f in frontiers]))
    largest = np.sort(np.array(owner_edges, dtype=np.int64))[::-1]
    return {"size": size, "queries": queries, "warm": warm, "frontiers_per_recall": len(frontiers) / queries,
            "owners_per_recall": len(owner_edges) / queries,
            "top_percent_owners_edge_share": float(largest[: max(len(largest) // 100, 1)].sum()
                                                   / max(largest.sum(), 1)),
            "namings_per_recall": len(namings) / queries,
            "named_per_recall": sum(len(n["keys"]) for n in namings) / queries,
            "edges_per_recall": edges / queries,
            "edges_per_target": edges / max(targets, 1), "everything_share": everything, "variants": rows,
            "machine": machine_info()}


def render(result: dict[str, Any], command: str) -> str:
    before = next(r for r in result["variants"] if r["variant"] == "strengths")
    table = markdown_table(
        ["statement", "wall ms / recall", "client CPU ms / recall", "server ms / recall", "wall vs strengths",
         "server vs strengths"],
        [[r["variant"], f"{r['wall_ms_per_recall']:.1f}", f"{r['client_cpu_ms_per_recall']:.1f}",
          f"{r['server_ms_per_recall']:.1f}",
          f"{r['wall_ms_per_recall'] / before['wall_ms_per_recall']:.2f}",
          f"{r['server_ms_per_recall'] / before['server_ms_per_recall']:.2f}"] for r in result["variants"]])
    return (f"# Store-side frontier reads: where the server's time goes\n\n{machine_line(result['machine'])}\n\n"
            f"{result['size']:,} passages, {result['queries']} recalls after {result['warm']}: "
            f"{result['frontiers_per_recall']:.1f} frontier reads of {result['owners_per_recall']:,.0f} nodes and "
            f"{result['edges_per_recall']:,.0f} edges a recall ({result['edges_per_target']:.2f} edges a distinct "
            f"target within a statement; the 1 % of nodes with the most edges hold "
            f"{result['top_percent_owners_edge_share']:.0%} of them), "
            f"{result['namings_per_recall']:.1f} reads naming {result['named_per_recall']:,.0f} targets the "
            f"reader's cache did not know; each read in one "
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
    parser.add_argument("--warm", type=int, default=10, help="recalls before the recorded ones")
    parser.add_argument("--out", type=Path, default=None, help="directory (default: results/)")
    args = parser.parse_args(argv)
    result = run(args.size, args.store, args.queries, args.rounds, args.warm)
    command = "python benchmarks/frontier_reads.py " + " ".join(
        a if "@" not in a else a.split("//")[0] + "//…@" + a.split("@")[-1] for a in (argv or sys.argv[1:]))
    text = render(result, command)
    print(text)
    paths = write_outputs("frontier_reads", result, text, **({"out_dir": args.out} if args.out else {}))
    log(f"wrote {paths[0]} and {paths[1]}")
    return result


if __name__ == "__main__":
    main()
