"""Bulk initial load: a hippo SQLite store (extracted and embedded) into an empty Neo4j database
through ``neo4j-admin database import full``, then the schema, the indexes and the meta node,
so that ``Neo4jStore`` opens the result as if the batch writer had written it.

Why this shape. ``neo4j-admin database import`` builds the store files directly, with no
transactions, at a speed Bolt cannot reach; but it writes only into a database that is empty
and not running. Neo4j Community has one user database and cannot stop it alone, so the whole
server is stopped, the (checked empty) database is overwritten, and the server started again:
that needs a server on this machine whose home hippo can read (``local_server``). The steps:

1. over Bolt: the database must hold no node at all (otherwise: refuse, nothing is touched);
2. the SQLite store -> CSV files (``bulk_export``);
3. stop the server, ``neo4j-admin database import full --overwrite-destination``, start it;
4. over Bolt: the meta node (revision, model binding) and the key-value area, then the schema
   and the vector and full-text indexes (``schema``), waiting until they are online;
5. the counts must match the source's.

Writes after that are the usual transactional ones.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from hippo.errors import StoreError
from hippo.store.cypher import cypher
from hippo.store.neo4j.bulk_export import CsvExport, Progress, export_csv
from hippo.store.neo4j.connection import Connection, parse_url
from hippo.store.neo4j.local_server import LocalNeo4j
from hippo.store.neo4j.migrate import migrate_spaces, migrate_waiting, migrate_walks
from hippo.store.neo4j.records import value_id
from hippo.store.neo4j.schema import META, ensure_vector_indexes, prepare

LOOPBACK = {"127.0.0.1", "localhost", "[::1]"}


@dataclass
class BulkReport:
    """What one bulk import did and how long each step took (seconds)."""

    url: str
    counts: dict[str, int]
    relationships: int
    nodes: int
    seconds: dict[str, float] = field(default_factory=dict)
    admin_stages: dict[str, float] = field(default_factory=dict)  # neo4j-admin's own, e.g. "Node import"

    @property
    def total_seconds(self) -> float:
        return sum(self.seconds.values())

    def rate(self, *steps: str) -> float:
        spent = sum(self.seconds[s] for s in steps) if steps else self.total_seconds
        return self.relationships / spent if spent else 0.0


_STAGE = re.compile(r"^(?P<stage>[A-Z][a-z]+(?: [a-z]+)*) COMPLETED in (?P<took>(?:\d+[hms]+ ?)+)\s*$", re.M)
_PART = re.compile(r"(\d+)(ms|h|m|s)")
_UNIT = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}


def admin_stages(output: str) -> dict[str, float]:
    """The stages ``neo4j-admin database import`` reports ("Node import COMPLETED in 54s 77ms"),
    in seconds: where an import's time went (vectors are node properties, so they land in
    "Node import")."""
    return {m["stage"]: sum(int(n) * _UNIT[u] for n, u in _PART.findall(m["took"])) for m in _STAGE.finditer(output)}


def connect(url: str) -> Connection:
    """A connection as ``Neo4jStore.from_url`` makes it (credentials from the URL or NEO4J_*)."""
    parsed = parse_url(url)
    return Connection(parsed, parsed.user or os.environ.get("NEO4J_USER") or "neo4j",
                      parsed.password if parsed.password is not None else os.environ.get("NEO4J_PASSWORD") or "",
                      parsed.database or os.environ.get("NEO4J_DATABASE") or None,
                      connection_timeout=10.0, max_retry_time=30.0)


def local_server(url: str, home: Path) -> LocalNeo4j:
    """The server ``url`` names, as the home directory ``home``; refused unless they agree."""
    parsed = parse_url(url)
    host, _, port = parsed.address.rpartition(":")
    if host not in LOOPBACK:
        raise StoreError(f"bulk import runs neo4j-admin on the server's own files, so the server must run on "
                         f"this machine; {parsed.scheme}://{parsed.address} is not a loopback address (for a "
                         "remote server, a cluster or Aura, write with 'hippo index --store URL')")
    server = LocalNeo4j.at(home)
    if server.bolt_port() != int(port):
        raise StoreError(f"the Neo4j in {server.home} listens on port {server.bolt_port()}, not {port}: "
                         "--home and --store name different servers")
    return server


def require_empty(db: Connection) -> None:
    [row] = db.read("bulk_any_node", "checking the database is empty", limit=1000)
    if row["nodes"]:
        held = f"{row['nodes']}{'+' if row['nodes'] >= 1000 else ''} nodes"
        raise StoreError(f"Neo4j at {db.url} is not empty ({held}, {row['passages']} of them passages); a bulk "
                         "import loads only an empty database. Write into it with 'hippo index --store URL', "
                         "or empty it first (MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS)")


def wait_online(url: str, timeout: float) -> Connection:
    deadline = time.monotonic() + timeout
    while True:
        db = connect(url)
        try:
            db.read("bulk_any_node", "waiting for the database", limit=1)
            return db
        except StoreError:
            db.close()
            if time.monotonic() > deadline:
                raise
            time.sleep(1.0)


def finish(db: Connection, export: CsvExport, index_timeout: float) -> None:
    """The meta node, the key-value area, the schema and the indexes (waited for), then what
    store-side walks read at each node (which looks passages up by id, so after the indexes)."""
    meta = export.meta
    # schema 3 until the walks' fields are filled: an import cut short there is finished on open
    db.write_one("bulk_meta", "writing the meta node", meta=META, revision=meta["revision"], seq=meta["seq"],
                 schema_version="3", model=meta["embedding_model"], dim=meta["embedding_dim"],
                 backend=meta["embedding_backend"])
    if export.values:
        db.write_one("kv_write", "writing values", rows=[
            {"id": value_id(v["namespace"], v["key"]), **v} for v in export.values])
    prepare(db)
    if meta["embedding_dim"]:
        ensure_vector_indexes(db, int(meta["embedding_dim"]))
    db.schema(cypher("await_indexes"), "waiting for the indexes to come online", seconds=int(index_timeout))
    migrate_walks(db)
    migrate_spaces(db)
    migrate_waiting(db)


def check_counts(db: Connection, export: CsvExport) -> dict[str, int]:
    [row] = db.read("bulk_counts", "counting what was imported")
    found = dict(row.items())
    wanted = {"documents": export.counts["documents"], "passages": export.counts["passages"],
              "entities": export.counts["entities"], "facts": export.counts["facts"],
              "mentions": export.counts["mentions"], "synonyms": export.counts["synonyms"],
              "vectors": export.counts["vectors"]}
    wrong = {k: (found.get(k), v) for k, v in wanted.items() if found.get(k) != v}
    if wrong:
        raise StoreError(f"the import at {db.url} does not match its source: "
                         + ", ".join(f"{k} {got} (expected {want})" for k, (got, want) in wrong.items()))
    return found


def bulk_import(source: Path, url: str, home: Path, *, csv_dir: Path | None = None, keep_csv: bool = False,
                workers: int = 2, threads: int = 2, memory: str = "2G", index_timeout: float = 3600.0,
                progress: Progress | None = None, step: Callable[[str], None] | None = None) -> BulkReport:
    """Load ``source`` into the empty database at ``url`` (served from ``home``)."""
    server = local_server(url, home)
    seconds: dict[str, float] = {}
    say = step or (lambda _: None)

    def timed(name: str, work: Callable[[], object]) -> object:
        say(name)
        t0 = time.perf_counter()
        result = work()
        seconds[name] = time.perf_counter() - t0
        return result

    if server.pid() is None:
        timed("start", lambda: server.start())
    db = wait_online(url, 180.0)
    try:
        require_empty(db)
        database = db.database or "neo4j"
    finally:
        db.close()
    directory = csv_dir or Path(tempfile.mkdtemp(prefix="hippo-bulk-", dir=home / "import"
                                                 if (home / "import").is_dir() else None))
    try:
        export: CsvExport = timed("export", lambda: export_csv(source, directory, workers=workers,
                                                               progress=progress))  # type: ignore[assignment]
        timed("stop", server.stop)
        try:
            output: str = timed("import", lambda: server.admin(  # type: ignore[assignment]
                "database", "import", "full", database, "--overwrite-destination", *export.admin_arguments(),
                f"--threads={threads}", f"--max-off-heap-memory={memory}",
                f"--report-file={directory / 'import.report'}"))
            stages = admin_stages(output)
        except StoreError:
            server.drop_database_files(database)  # it was empty: the next start makes it empty again
            raise
    finally:
        if server.pid() is None:
            timed("restart", lambda: server.start())
        if not keep_csv and csv_dir is None:
            shutil.rmtree(directory, ignore_errors=True)
    db: Connection = timed("online", lambda: wait_online(url, 180.0))  # type: ignore[assignment]
    try:
        timed("indexes", lambda: finish(db, export, index_timeout))
        counts = check_counts(db, export)
    finally:
        db.close()
    return BulkReport(url=db.url, counts=counts, relationships=export.relationship_count,
                      nodes=sum(export.counts[k] for k in ("documents", "passages", "entities", "vectors")),
                      seconds=seconds, admin_stages=stages)
