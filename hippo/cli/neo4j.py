"""``hippo neo4j``: load a whole store into an empty Neo4j at import speed, and (re)create the
indexes a Neo4j store needs.

Why ``import --from STORE.db`` and not ``index --bulk``: extraction and embedding are most of
an indexing run, and they go fastest into the embedded SQLite store, which resumes where a
run stopped. Bulk loading is then one copy of a finished store, which can be checked against
its source; the copy's speed is neo4j-admin's, not Bolt's.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated

import typer

from hippo.cli.common import StoreOption, err, fail, out
from hippo.errors import HippoError

NO_LIMIT = 7 * 24 * 3600.0  # what --timeout 0 waits: a week

neo4j_app = typer.Typer(no_args_is_help=True, help=__doc__)


def _neo4j_url(store: str | None) -> str:
    from hippo.config import Settings

    url = store or Settings().store
    if "://" not in url:
        raise fail(f"--store must be a Neo4j URL (neo4j://host:7687 or bolt://...), not {url!r}")
    return url


@neo4j_app.command("import")
def import_(
    source: Annotated[Path, typer.Option("--from", help="the SQLite hippo store to copy (extracted and embedded)")],
    store: StoreOption = None,
    home: Annotated[Path | None, typer.Option(help="the Neo4j server's home directory (it is stopped and "
                                                   "started again) [env HIPPO_NEO4J_HOME]")] = None,
    csv: Annotated[Path | None, typer.Option(help="write the CSV files here and keep them [default: a "
                                                  "temporary folder under HOME/import, removed after]")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON instead of a summary")] = False,
) -> None:
    """Copy a SQLite hippo store into an EMPTY Neo4j database with neo4j-admin's bulk import.

    The server must run on this machine from HOME: it is stopped for the import and started
    again. The schema, the vector and full-text indexes and the meta node follow, so the result
    opens as a normal hippo store (same revision, model binding, records). To add to a store
    that already holds data, use 'hippo index --store URL'.
    """
    from hippo.store.neo4j.bulk import bulk_import

    url = _neo4j_url(store)
    where = home or (Path(os.environ["HIPPO_NEO4J_HOME"]) if os.environ.get("HIPPO_NEO4J_HOME") else None)
    if where is None:
        raise fail("--home is required (or HIPPO_NEO4J_HOME): the bulk import stops the server and writes its "
                   "files, so it needs the server's home directory on this machine")
    try:
        with err.status("bulk import...") as status:
            report = bulk_import(source, url, where, csv_dir=csv,
                                 step=lambda name: status.update(f"bulk import: {name}..."))
    except HippoError as exc:
        raise fail(str(exc)) from None
    summary = {"store": report.url, "counts": report.counts, "relationships": report.relationships,
               "nodes": report.nodes, "seconds": {k: round(v, 2) for k, v in report.seconds.items()},
               "relationships_per_second": round(report.rate()),
               "admin_stages": {k: round(v, 2) for k, v in report.admin_stages.items()}}
    if as_json:
        out.print_json(json.dumps(summary))
        return
    steps = ", ".join(f"{k} {v:.1f}s" for k, v in report.seconds.items())
    if report.admin_stages:  # where neo4j-admin's own time went (vectors are node properties)
        stages = ", ".join(f"{k.lower()} {v:.1f}s" for k, v in report.admin_stages.items())
        steps += f" (neo4j-admin: {stages})"
    out.print(f"imported {source} into {report.url}: {report.counts['passages']} passages, "
              f"{report.counts['entities']} entities, {report.counts['facts']} facts, {report.relationships} "
              f"relationships in {report.total_seconds:.1f}s ({report.rate():,.0f} relationships/s; {steps})",
              highlight=False)


@neo4j_app.command()
def indexes(store: StoreOption = None,
            timeout: Annotated[float, typer.Option(min=0, help="seconds to wait for the indexes to come online "
                                                   "(0: no limit)")] = 3600.0,
            unquantize: Annotated[bool, typer.Option(help="build again the vector indexes built with int8 codes "
                                                     "(Neo4j's default, hippo's before): they find fewer of the "
                                                     "nearest records")] = False) -> None:
    """Create the constraints, the full-text index and the vector indexes of a hippo store in Neo4j
    (for the bound model's dimension), and wait until they are online."""
    from hippo.store.neo4j import create_indexes

    url = _neo4j_url(store)
    try:
        with err.status("creating indexes..."):
            names = create_indexes(url, timeout or NO_LIMIT, unquantize=unquantize)
    except HippoError as exc:
        raise fail(str(exc)) from None
    out.print(f"{url}: {len(names)} indexes online ({', '.join(names)})", highlight=False)
