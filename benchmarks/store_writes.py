"""Store-side recall right after a write, with the reader's cached edges kept or dropped.

Every write moves the store revision. A store-side reader keeps the edges it fetched that the
writes since did not change (each write lists what it changed, a ``(:Change)``); before, it dropped
them all, so the first recall after any write was a cold one. This benchmark writes one passage
(mentioning the entities of a stored one, as a ``remember`` about known things does) directly
through the store, then recalls a new question, alternating two readers of one process: one keeps
its cache (today's behaviour), one is made to drop it before each recall (what every write did).
Synthetic store (``benchmarks/synthetic.py``, bulk-loaded as for ``store_read.py speed``), recall
without query embedding. Writes ``results/store_writes.{json,md}``.

    python benchmarks/store_writes.py --size 100000 --store bolt://neo4j:...@127.0.0.1:7732
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import RESULTS, log, machine_info, machine_line, markdown_table, percentiles  # noqa: E402

OUT = RESULTS / "store_writes.json"
PICK = "MATCH (p:Passage) WITH p SKIP $skip LIMIT 1 MATCH (p)-[:MENTIONS]->(e:Entity) RETURN p.space AS space, " \
       "collect(e.id) AS entities"


def _write(store: Any, rng: np.random.Generator, size: int, i: int, tag: str) -> None:
    """One new passage in a stored passage's space, mentioning that passage's entities."""
    from hippo.models import DocumentRecord, Mention, Passage
    from hippo.store.base import WriteBatch, embed_hash

    with store.db.session() as session:
        row = session.run(PICK, skip=int(rng.integers(size))).single()
    doc = DocumentRecord(id=f"{tag}-{i}", title=f"Note {tag} {i}", space=row["space"])
    passage = Passage(id=f"passage:{tag}-{i}", doc_id=doc.id, title=doc.title, space=row["space"],
                      text=f"A note {tag} {i} about " + ", ".join(row["entities"][:12]) + ".")
    vector = rng.standard_normal(384).astype(np.float32)
    store.write(WriteBatch(documents=[doc], passages=[passage],
                           mentions=[Mention(passage_id=passage.id, entity_id=e) for e in row["entities"][:12]],
                           vectors={embed_hash(passage): vector / np.linalg.norm(vector)}))


def run(size: int, store_url: str, writes: int, warm: int) -> dict[str, Any]:
    import hippo
    from benchmarks.synthetic import SyntheticCorpus, SyntheticEmbedder, SyntheticExtractor, query_phrases
    from hippo.extract.spacy import load_pipeline
    from hippo.store.neo4j import Neo4jStore

    load_pipeline()
    readers = {how: hippo.Memory(Neo4jStore.from_url(store_url), settings=hippo.Settings(neo4j_read="store"),
                                 embedder=SyntheticEmbedder(), extractor=SyntheticExtractor())
               for how in ("kept", "dropped")}
    for reader in readers.values():
        reader._recaller._phrases = query_phrases
    writer = Neo4jStore.from_url(store_url)
    corpus, rng = SyntheticCorpus(size), np.random.default_rng(size + 1)
    questions = [corpus.query(int(i)) for i in rng.integers(size, size=warm + 4 * writes)]
    for q in questions[:warm]:  # both readers warm, on the same questions
        for reader in readers.values():
            reader.recall(q)
    took: dict[str, list[float]] = {"kept": [], "dropped": [], "no write": [], "write": []}
    tag = f"w{os.getpid()}"
    for i in range(2 * writes):
        how = ("kept", "dropped")[i % 2]
        clock = time.perf_counter()
        _write(writer, rng, size, i, tag)
        took["write"].append(1000 * (time.perf_counter() - clock))
        if how == "dropped":
            readers[how].store_reads._caches.clear()  # what every write did before stop 30
        clock = time.perf_counter()
        readers[how].recall(questions[warm + i])
        took[how].append(1000 * (time.perf_counter() - clock))
        log(f"{i + 1}/{2 * writes}: {how} {took[how][-1]:.0f} ms")
        if how == "kept":  # the same reader, no write in between: what a warm recall costs here
            clock = time.perf_counter()
            readers[how].recall(questions[warm + 2 * writes + i])
            took["no write"].append(1000 * (time.perf_counter() - clock))
    for reader in (*readers.values(),):
        reader.close()
    writer.close()
    return {"run": f"after a write {size}", "passages": size, "writes": writes, "warm_up": warm,
            "recall_after_write_ms": {how: percentiles(v) for how, v in took.items() if how != "write"},
            "write_ms": percentiles(took["write"]), "machine": machine_info()}


def render(row: dict[str, Any]) -> str:
    header = ["passages", "reader's cache", "recalls", "p50 ms", "p95 ms"]
    rows = [[row["passages"], how, row["writes"], v["p50"], v["p95"]]
            for how, v in row["recall_after_write_ms"].items()]
    return "\n".join(["# Store-side recall right after a write", "", "`python benchmarks/store_writes.py` "
                      "(see its docstring).", "", markdown_table(header, rows), "",
                      f"One write (a passage and 12 mentions, through Bolt): p50 {row['write_ms']['p50']:.0f} ms.", "",
                      "Machine: " + machine_line(row["machine"]), ""])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, required=True, help="passages of the synthetic store")
    parser.add_argument("--store", required=True)
    parser.add_argument("--writes", type=int, default=30, help="writes per reader")
    parser.add_argument("--warm", type=int, default=50, help="recalls of each reader before the first write")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    row = run(args.size, args.store, args.writes, args.warm)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(row, indent=1) + "\n")
    args.out.with_suffix(".md").write_text(render(row))
    print(render(row))


if __name__ == "__main__":
    main()
