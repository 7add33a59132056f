"""Bulk initial load into Neo4j (``hippo neo4j import``) against today's Bolt writer, on the same data.

    python benchmarks/bulk_load.py --source STORE.db --store bolt://127.0.0.1:7713 --home NEO4J_HOME
    python benchmarks/bulk_load.py --smoke --store bolt://127.0.0.1:7713 --home NEO4J_HOME

The target server must be one the import can stop and start (a local home); its database is
emptied between steps, so never point this at data you keep. Steps, each into an empty database:

1. **bolt**: the first ``--bolt-documents`` documents of the source with all their records
   (passages, entities, facts, mentions, synonyms, vectors), read from the source and written
   through ``Neo4jStore.write`` in batches of ``--batch`` documents, as ``hippo index`` sends them;
2. **bulk (same data)**: those same documents, as a SQLite store of their own, through the bulk import;
3. **bulk (whole source)**: the whole source through the bulk import (skipped when step 1 took it all).

relationships/s = relationships written / wall seconds of the whole step; for the bulk import
that is CSV export + server stop + ``neo4j-admin`` + start + schema and indexes online (the
vector indexes are populated before it counts as done), and each phase is reported too.
``--smoke``: a 300-passage synthetic store, into a temporary results folder.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

try:
    from benchmarks.common import (RESULTS, log, machine_info, machine_line, markdown_table, progress_printer,
                                   write_outputs)
except ImportError:  # run as ``python benchmarks/bulk_load.py``
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from benchmarks.common import (RESULTS, log, machine_info, machine_line, markdown_table, progress_printer,
                                   write_outputs)

from hippo.models import DocumentRecord, Entity, Fact, Mention, Passage, Synonym
from hippo.store import SQLiteStore, WriteBatch, embed_hash
from hippo.store.base import LEGACY_BACKEND
from hippo.store.neo4j import Neo4jStore
from hippo.store.neo4j.bulk import bulk_import, connect
from hippo.store.neo4j.bulk_export import open_source, read_meta
from hippo.store.sqlite_embedding import stored_format, unblob


def batches(db: sqlite3.Connection, documents: int, per_batch: int) -> Iterator[WriteBatch]:
    """The first ``documents`` documents with every record they bring, ``per_batch`` at a time."""
    doc_rows = db.execute("SELECT id, title, source, space, version, meta, kind FROM documents ORDER BY rowid "
                          "LIMIT ?", (documents,)).fetchall()
    synonyms = db.execute("SELECT a, b, score FROM synonyms").fetchall()
    kept = stored_format(db)  # how the source keeps its vectors (float16 in stores made since stop 56)
    written: set[str] = set()
    for start in range(0, len(doc_rows), per_batch):
        group = doc_rows[start:start + per_batch]
        marks = ",".join("?" * len(group))
        ids = [r[0] for r in group]
        passages = [Passage(id=r[0], doc_id=r[1], index=r[2], title=r[3], text=r[4], space=r[5], version=r[6],
                            source=r[7], page=r[8], headings=json.loads(r[9]) if r[9] else [])
                    for r in db.execute("SELECT id, doc_id, idx, title, text, space, version, source, page, headings "
                                        f"FROM passages WHERE doc_id IN ({marks}) ORDER BY rowid", ids)]
        pids = [p.id for p in passages]
        pmarks = ",".join("?" * len(pids))
        facts = [Fact(id=r[0], subject_id=r[1], predicate=r[2], object_id=r[3], passage_id=r[4], subject=r[5],
                      object=r[6]) for r in db.execute(
            "SELECT id, subject_id, predicate, object_id, passage_id, subject, object FROM facts "
            f"WHERE passage_id IN ({pmarks}) ORDER BY rowid", pids)]
        mentions = [Mention(passage_id=p, entity_id=e) for p, e in db.execute(
            f"SELECT passage_id, entity_id FROM mentions WHERE passage_id IN ({pmarks})", pids)]
        wanted = sorted({m.entity_id for m in mentions} | {x for f in facts for x in (f.subject_id, f.object_id)})
        entities = [Entity(id=r[0], name=r[1], key=r[2], type=r[3]) for r in db.execute(
            f"SELECT id, name, key, type FROM entities WHERE id IN ({','.join('?' * len(wanted))})", wanted)
            if r[0] not in written]
        written.update(e.id for e in entities)
        links = [Synonym(a=a, b=b, score=s) for a, b, s in synonyms if a in written and b in written]
        synonyms = [s for s in synonyms if not (s[0] in written and s[1] in written)]
        hashes = sorted({embed_hash(r) for r in (*passages, *entities, *facts)})
        vectors = {h: unblob(v, kept) for h, v in db.execute(
            f"SELECT hash, vector FROM vectors WHERE hash IN ({','.join('?' * len(hashes))})", hashes)}
        yield WriteBatch(documents=[DocumentRecord(id=r[0], title=r[1], source=r[2], space=r[3], version=r[4],
                                                   meta=json.loads(r[5] or "{}"), kind=r[6]) for r in group],
                         passages=passages, entities=entities, facts=facts, mentions=mentions, synonyms=links,
                         vectors=vectors)


def relationships(batch: WriteBatch) -> int:
    return len(batch.passages) + len(batch.mentions) + len(batch.facts) + len(batch.synonyms)


def empty(url: str) -> None:
    """Every node and every vector index gone (the bulk import replaces the database files, the
    Bolt writer needs indexes of the right dimension)."""
    db = connect(url)
    try:
        with db.session() as session:
            session.run("MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS").consume()
            for name in [r["name"] for r in session.run("SHOW VECTOR INDEXES YIELD name")]:
                session.run("DROP INDEX $name IF EXISTS", name=name).consume()
    finally:
        db.close()


def bolt_step(source: Path, url: str, documents: int, per_batch: int, subset: Path) -> dict[str, Any]:
    """Write through Bolt (timed) and, untimed, the same batches into the SQLite store ``subset``."""
    db = open_source(source)
    meta = read_meta(db, source)
    neo, copy = Neo4jStore.from_url(url), SQLiteStore(subset)
    try:
        for store in (neo, copy):
            store.bind_embedding_model(meta["embedding_model"], meta["embedding_dim"],
                                       meta["embedding_backend"] or LEGACY_BACKEND)
        seconds, rels, passages, load = 0.0, 0, 0, os.getloadavg()[0]
        for i, batch in enumerate(batches(db, documents, per_batch)):
            t0 = time.perf_counter()
            neo.write(batch)
            seconds += time.perf_counter() - t0
            copy.write(batch)
            rels, passages = rels + relationships(batch), passages + len(batch.passages)
            if i % 10 == 0:
                log(f"  bolt: {passages:,} passages, {rels:,} relationships, {rels / seconds:,.0f}/s")
    finally:
        neo.close()
        copy.close()
        db.close()
    return {"step": "bolt", "passages": passages, "relationships": rels, "seconds": seconds,
            "relationships_per_s": rels / seconds, "load_average": [load, os.getloadavg()[0]]}


def bulk_step(name: str, source: Path, url: str, home: Path) -> dict[str, Any]:
    load = os.getloadavg()[0]
    t0 = time.perf_counter()

    def step(phase: str) -> None:
        log(f"  {name}: {phase} (at {time.perf_counter() - t0:.0f}s, load {os.getloadavg()[0]:.1f})")

    report = bulk_import(source, url, home, progress=progress_printer(name), step=step)
    return {"step": name, "passages": report.counts["passages"], "relationships": report.relationships,
            "nodes": report.nodes, "seconds": report.total_seconds, "relationships_per_s": report.rate(),
            "import_relationships_per_s": report.rate("import"), "phases": report.seconds,
            "admin_stages": report.admin_stages, "load_average": [load, os.getloadavg()[0]]}


def render(record: dict[str, Any]) -> str:
    rows = [[r["step"], f"{r['passages']:,}", f"{r['relationships']:,}", f"{r['seconds']:.1f}",
             f"{r['relationships_per_s']:,.0f}",
             f"{r['import_relationships_per_s']:,.0f}" if "import_relationships_per_s" in r else "–",
             ", ".join(f"{k} {v:.1f}" for k, v in r.get("phases", {}).items()) or "–",
             ", ".join(f"{k.lower()} {v:.1f}" for k, v in r.get("admin_stages", {}).items()) or "–",
             " → ".join(f"{x:.1f}" for x in r["load_average"])] for r in record["steps"]]
    return "\n".join([
        "# Bulk initial load into Neo4j vs the Bolt writer", "",
        f"Source: `{record['source']}`; Neo4j {record['neo4j']}. {machine_line(record['machine'])}", "",
        markdown_table(["step", "passages", "relationships", "seconds", "rel/s (whole step)",
                        "rel/s (neo4j-admin only)", "phases (s)", "neo4j-admin's stages (s)",
                        "load avg (start → end)"], rows), "",
        ("The bulk step's seconds are the whole `hippo neo4j import`: CSV export, server stop, `neo4j-admin "
         "database import full`, start, schema and vector/full-text indexes online."), "",
        f"Command: `{record['command']}`"])


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", type=Path, help="a SQLite hippo store (extracted and embedded)")
    parser.add_argument("--store", required=True, help="bolt:// URL of the target server (its data is erased)")
    parser.add_argument("--home", type=Path, required=True, help="that server's home directory")
    parser.add_argument("--bolt-documents", type=int, default=10_000)
    parser.add_argument("--batch", type=int, default=256, help="documents per Bolt write")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--smoke", action="store_true", help="a 300-passage synthetic store, results in a temp dir")
    args = parser.parse_args(argv)
    scratch = Path(tempfile.mkdtemp(prefix="hippo-bulk-bench-"))
    if args.smoke:
        from benchmarks.scale import build

        build(300, scratch)
        args.source, args.out, args.bolt_documents = scratch / "scale-300.db", scratch, 300
    if args.source is None:
        parser.error("--source is required (or --smoke)")
    with sqlite3.connect(f"file:{args.source}?immutable=1", uri=True) as db:
        total = db.execute("SELECT count(*) FROM documents").fetchone()[0]
    steps: list[dict[str, Any]] = []
    record = {"source": str(args.source), "neo4j": "", "steps": steps, "machine": machine_info(),
              "command": " ".join(["python", *sys.argv])}
    stem = "bulk_load-smoke" if args.smoke else "bulk_load"

    def save(step: dict[str, Any]) -> None:  # after every step: a run cut short keeps what it measured
        steps.append(step)
        record["machine"] = machine_info()
        write_outputs(stem, record, render(record), args.out)

    log(f"bolt: the first {min(args.bolt_documents, total):,} of {total:,} documents")
    empty(args.store)
    store = Neo4jStore.from_url(args.store)
    version = store.db.read("server_components", "checking the server version")[0]
    record["neo4j"] = f"{version['versions'][0]} {version['edition']}"
    store.close()
    save(bolt_step(args.source, args.store, args.bolt_documents, args.batch, scratch / "subset.db"))
    empty(args.store)
    save(bulk_step("bulk (same data)", scratch / "subset.db", args.store, args.home))
    if total > args.bolt_documents:
        empty(args.store)
        save(bulk_step("bulk (whole source)", args.source, args.store, args.home))
    paths = args.out / f"{stem}.json", args.out / f"{stem}.md"
    print(render(record))
    log(f"wrote {paths[0]} and {paths[1]}")
    return record


if __name__ == "__main__":
    main()
