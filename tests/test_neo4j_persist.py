"""The derived state of a Neo4j database read in memory mode, saved on the machine that opens it
(``Settings.derived_dir``, by default ``HIPPO_CACHE_DIR/derived``): a second open loads it instead of
rebuilding from Neo4j, and a copy another writer made stale, or one of another database, is never used."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.synthetic import SyntheticCorpus, SyntheticEmbedder, SyntheticExtractor
from hippo import Memory, Settings
from hippo.memory.home import store_id

pytestmark = pytest.mark.neo4j

CORPUS = SyntheticCorpus(90)
QUERIES = [CORPUS.query(i) for i in (3, 50, 85)]


def _open(neo4j_store, **settings) -> Memory:
    # exact PPR: a saved state and one rebuilt from Neo4j must answer exactly alike (the local push visits
    # a vertex's edges in the order they were added, which a rebuild may change; ``tests/test_persist.py``)
    return Memory(neo4j_store(), settings=Settings(vector_exact_max=40, ppr_solver="exact", **settings),
                  embedder=SyntheticEmbedder(), extractor=SyntheticExtractor())


def _answers(memory: Memory) -> list:
    return [[(h.id, round(h.score, 7)) for h in memory.recall(q, k=8).hits] for q in QUERIES] + \
        [[h.id for h in memory.retrieve(q, k=8, mode="dense")] for q in QUERIES]


def test_a_second_open_loads_the_saved_state_and_answers_as_a_rebuilt_one(neo4j_store, tmp_path, monkeypatch):
    monkeypatch.delenv("HIPPO_DERIVED_DIR", raising=False)  # the default: under HIPPO_CACHE_DIR
    monkeypatch.setenv("HIPPO_CACHE_DIR", str(tmp_path))
    memory = _open(neo4j_store)
    assert memory.engine.cache.outcome == "missing"
    memory.index(CORPUS.documents(0, 60))
    memory.index(CORPUS.documents(60, 90))  # a journaled write after the first save
    live = _answers(memory)
    assert {shard.kind for _, index in memory.engine.state.vector_indexes() for shard in index.shards.values()} \
        == {"hnsw"}  # the graphs are saved and mapped too
    memory.close()
    home = memory.engine.cache.directory
    assert home.parent == tmp_path / "derived" and home.name.startswith("neo4j-")
    assert (home / "MANIFEST.json").is_file()

    reopened = _open(neo4j_store)
    assert reopened.engine.cache.outcome == "loaded"
    rebuilt = _open(neo4j_store, derived_cache=False)
    assert _answers(reopened) == live == _answers(rebuilt)
    reopened.close()
    rebuilt.close()


def test_a_write_by_another_process_makes_the_saved_state_stale(neo4j_store, tmp_path, monkeypatch):
    monkeypatch.setenv("HIPPO_DERIVED_DIR", str(tmp_path))
    first = _open(neo4j_store)
    first.index(CORPUS.documents(0, 60))
    first.close()
    other = _open(neo4j_store, derived_cache=False)  # another machine's process: it keeps no copy here
    other.index(CORPUS.documents(60, 90))
    other.close()

    reopened = _open(neo4j_store)
    assert reopened.engine.cache.outcome.startswith("stale: saved revision")
    rebuilt = _open(neo4j_store, derived_cache=False)
    assert _answers(reopened) == _answers(rebuilt) and reopened.stats().passages == 90
    reopened.close()
    rebuilt.close()
    last = _open(neo4j_store)
    assert last.engine.cache.outcome == "loaded"  # rebuilt, and saved again
    last.close()


def test_a_database_emptied_and_written_again_starts_a_new_folder(neo4j_store, neo4j_wipe, tmp_path, monkeypatch):
    """The folder is keyed by the server's address, the database and the store's id: a database
    emptied and written again is a new store (a new id), so its first open finds nothing saved,
    even where its revision comes back to the one saved for the old store; and the old store's
    folder is deleted, unless a process still has it open."""
    monkeypatch.setenv("HIPPO_DERIVED_DIR", str(tmp_path))
    memory = _open(neo4j_store)
    memory.index(CORPUS.documents(0, 20))
    first_id, first_home = store_id(memory.store), memory.engine.cache.directory
    neo4j_wipe()
    kept = _open(neo4j_store)  # the first memory still holds the old folder open: it stays
    assert kept.engine.cache.outcome == "missing" and first_home.is_dir()
    assert store_id(kept.store) != first_id and kept.engine.cache.directory != first_home
    kept.close()
    memory.close()
    neo4j_wipe()
    again = _open(neo4j_store)  # nothing holds the earlier folders now: they go
    assert again.engine.cache.outcome == "missing"
    assert [p.name for p in tmp_path.iterdir()] == [again.engine.cache.directory.name]
    again.close()


def test_a_bulk_import_is_another_store(tmp_path):
    """The import copies the source's key-value entries, but not its id."""
    from hippo.store import SQLiteStore
    from hippo.store.base import DERIVED_NAMESPACE
    from hippo.store.neo4j.bulk_export import export_csv

    source = Memory(SQLiteStore(tmp_path / "s.db"), embedder=SyntheticEmbedder(), extractor=SyntheticExtractor())
    source.index(CORPUS.documents(0, 10))
    source.store.put_values("notes", {"kept": "yes"})
    assert store_id(source.store)
    source.close()
    export = export_csv(Path(tmp_path / "s.db"), tmp_path / "csv")
    assert {"namespace": "notes", "key": "kept", "value": "yes"} in export.values
    assert not [v for v in export.values if v["namespace"] == DERIVED_NAMESPACE]
