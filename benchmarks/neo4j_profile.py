"""Where a Neo4j server spends its CPU on hippo's store-side reads, and what one property read costs.

Two measurements, each printing a table and writing JSON and Markdown (``--out``):

- ``jfr``: a Java Flight Recorder recording of the server (taken around any run, e.g. ``store_read.py
  speed``) summed by what the samples were doing: a node's property read, a relationship expansion,
  an index seek, a vector or full-text search, a WHERE predicate, ``collect``, page-cache pins.
  A sample counts once in each category one of its frames belongs to (they overlap).

      jcmd $(cat <neo4j home>/run/neo4j.pid) JFR.start name=h settings=profile filename=/tmp/neo.jfr
      python benchmarks/store_read.py speed --size 100000 --store bolt://127.0.0.1:7732 --mode store ...
      jcmd <pid> JFR.stop name=h
      python benchmarks/neo4j_profile.py jfr /tmp/neo.jfr

- ``properties``: one statement over every passage node, each testing one thing of the node, timed
  (median of 5 after 2 warm-ups): nothing, a label, a property present in every passage (each of
  ``--keys``), ``forgotten_at`` (absent from every live passage). Neo4j's record format keeps a node's
  properties as a chain of records read from its head: a property found early stops the read, one
  that is absent is known only at the chain's end.

      python benchmarks/neo4j_profile.py properties --store bolt://127.0.0.1:7732
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # also when run as a script

from benchmarks.common import RESULTS, machine_info, machine_line, markdown_table, write_outputs  # noqa: E402

FRAME = re.compile(r"^\s+([\w.$<>]+)\(")
Sample = list[str]


def _any(*ends: str, has: str | None = None) -> Callable[[Sample], bool]:
    """A sample with a frame ending in one of ``ends`` (or holding ``has``)."""
    return lambda sample: any(f.endswith(ends) if has is None else has in f for f in sample)


def _knn(sample: Sample) -> bool:
    return any("KnnVectorQuery" in f or "HnswGraphSearcher" in f for f in sample)


CATEGORIES: dict[str, Callable[[Sample], bool]] = {
    "a node's property read": _any("ReadOperations.getProperty", "CursorUtils.nodeGetProperty"),
    "a relationship's property read": _any(has="relationshipGetProperty"),
    "relationship expansion": _any("RelationshipTraversalCursor.next"),
    "a node property index seek": _any("KernelRead.nodeIndexSeek"),
    "a relationship property index seek": _any("KernelRead.relationshipIndexSeek"),
    "Lucene's vector search (HNSW)": _knn,
    "Lucene's full-text search": lambda s: not _knn(s) and any(f.startswith("org.apache.lucene.search.") for f in s),
    "a WHERE predicate": _any("Predicate.apply"),
    "collect()": _any("CollectFunction.apply"),
    "page-cache pins": _any("MuninnPageCursor.pin", "MuninnPageCursor.uncommonPin"),
    "outside Cypher's operators (Bolt, transactions, GC threads)":
        lambda s: not any(f.startswith("org.neo4j.cypher.internal.runtime") for f in s),
}


def jfr_samples(recording: Path) -> list[list[str]]:
    """Each execution sample's frames, innermost first (``jfr print``, JDK 17+)."""
    jfr = shutil.which("jfr") or str(Path(os.environ.get("JAVA_HOME", "/usr")) / "bin" / "jfr")
    text = subprocess.run([jfr, "print", "--events", "jdk.ExecutionSample", "--stack-depth", "96", str(recording)],
                          capture_output=True, text=True, check=True).stdout
    samples: list[list[str]] = []
    for line in text.splitlines():
        if line.startswith("jdk.ExecutionSample"):
            samples.append([])
        elif samples and (m := FRAME.match(line)):
            samples[-1].append(m.group(1))
    return samples


def summarize_jfr(samples: list[list[str]]) -> list[dict[str, Any]]:
    n = max(1, len(samples))
    rows = [{"category": name, "share": round(100 * sum(map(test, samples)) / n, 1)}
            for name, test in CATEGORIES.items()]
    return sorted(rows, key=lambda r: -r["share"])


def time_properties(uri: str, auth: tuple[str, str], keys: Sequence[str]) -> list[dict[str, Any]]:
    from neo4j import GraphDatabase

    tests = {"nothing (count)": "true", "a label (NOT p:Entity)": "NOT p:Entity",
             **{f"present: {k}": f"p.{k} IS NOT NULL" for k in keys},
             "absent: forgotten_at": "p.forgotten_at IS NULL"}
    rows = []
    with GraphDatabase.driver(uri, auth=auth, notifications_min_severity="OFF") as driver, driver.session() as s:
        chain = s.run("MATCH (p:Passage) WITH p LIMIT 1 RETURN keys(p) AS k").single()["k"]
        for name, test in tests.items():
            query = f"MATCH (p:Passage) WHERE {test} RETURN count(p) AS n"
            for _ in range(2):
                s.run(query).consume()
            seconds, n = [], 0
            for _ in range(5):
                clock = time.perf_counter()
                n = s.run(query).single()["n"]
                seconds.append(time.perf_counter() - clock)
            median = statistics.median(seconds)
            rows.append({"test": name, "passages": n, "ms": round(1000 * median, 1),
                         "us_a_passage": round(1e6 * median / max(n, 1), 3)})
    base = rows[0]["us_a_passage"]
    for row in rows:
        row["us_over_nothing"] = round(row["us_a_passage"] - base, 3)
    return [{"chain": chain}, *rows]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=RESULTS, help="folder for neo4j_profile.json / .md")
    sub = parser.add_subparsers(dest="what", required=True)
    j = sub.add_parser("jfr")
    j.add_argument("recording", type=Path)
    p = sub.add_parser("properties")
    p.add_argument("--store", default=os.environ.get("NEO4J_URI", "bolt://127.0.0.1:7687"))
    p.add_argument("--keys", nargs="+", default=["id", "space", "seq", "doc_id"])
    args = parser.parse_args(argv)
    info = machine_info()
    command = "python benchmarks/neo4j_profile.py " + " ".join(sys.argv[1:] if argv is None else argv)
    if args.what == "jfr":
        samples = jfr_samples(args.recording)
        rows = summarize_jfr(samples)
        table = markdown_table(["what the server was doing (overlapping)", "% of samples"],
                               [[r["category"], r["share"]] for r in rows])
        text = f"# Neo4j's CPU by what it was doing\n\n{len(samples)} samples of `{args.recording}`.\n\n{table}\n"
        record: dict[str, Any] = {"samples": len(samples), "rows": rows}
    else:
        chain, *rows = time_properties(args.store, (os.environ.get("NEO4J_USER", "neo4j"),
                                                    os.environ.get("NEO4J_PASSWORD", "hippo-password")), args.keys)
        table = markdown_table(["statement's test of each passage", "passages", "ms", "µs a passage",
                                "µs over nothing"],
                               [[r["test"], f"{r['passages']:,}", r["ms"], f"{r['us_a_passage']:.3f}",
                                 f"{r['us_over_nothing']:.3f}"] for r in rows])
        text = (f"# One property read, by where it is found\n\nA passage's keys (`keys(p)`, not the chain's order): "
                f"{', '.join(chain['chain'])}.\n\n{table}\n")
        record = {"store": args.store, "keys": chain["chain"], "rows": rows}
    text += f"\nCommand: `{command}`\n\nMachine: {machine_line(info)}\n"
    print(text)
    write_outputs(f"neo4j_profile-{args.what}", {**record, "machine": info, "command": command}, text, args.out)


if __name__ == "__main__":
    main()
