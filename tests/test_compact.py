"""``hippo compact``: an older SQLite store's float32 vectors rewritten at float16, atomically, and
the freed pages given back."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path

import numpy as np
import pytest

from hippo.cli import doctor
from hippo.config import Settings
from hippo.datasets import SAMPLE
from hippo.errors import InvalidInput, StoreError
from hippo.ids import text_hash
from hippo.store import EmbeddingIdentity, SQLiteStore, WriteBatch, sqlite_embedding
from hippo.store.compact import compact, compact_url
from hippo.store.sqlite_embedding import FULL
from tests.test_cli import hippo

DIM = 384


def _older_store(path: Path) -> None:
    """An empty store as hippo left it before float16 vectors: no ``vector_format`` in meta, 4 KB pages."""
    with closing(sqlite3.connect(path)) as db:
        db.execute("PRAGMA page_size = 4096")
        db.execute("VACUUM")
    with closing(SQLiteStore(path)) as store:
        store.bind_embedding_model("test-model", DIM)
    with closing(sqlite3.connect(path)) as db, db:
        db.execute("DELETE FROM meta WHERE key = ?", (sqlite_embedding.FORMAT_KEY,))


def _unit_vectors(n: int, seed: int = 0) -> dict[str, np.ndarray]:
    rows = np.random.default_rng(seed).normal(size=(n, DIM)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    return {text_hash(f"text {seed}-{i}"): row for i, row in enumerate(rows)}


def _blobs(path: Path, table: str = "vectors") -> dict[str, bytes]:
    with closing(sqlite3.connect(path)) as db:
        return dict(db.execute(f"SELECT hash, vector FROM {table}"))


def _page_size(path: Path) -> int:
    with closing(sqlite3.connect(path)) as db:
        return db.execute("PRAGMA page_size").fetchone()[0]


def _journal_mode(path: Path) -> str:
    with closing(sqlite3.connect(path)) as db:
        return db.execute("PRAGMA journal_mode").fetchone()[0]


def _write_vectors(store: SQLiteStore, vectors: dict[str, np.ndarray]) -> None:
    store.write(WriteBatch(vectors=vectors))


def test_compact_rewrites_every_float32_vector_at_float16_bumps_the_revision_and_shrinks_the_file(tmp_path):
    path = tmp_path / "older.db"
    _older_store(path)
    live = _unit_vectors(20_000)  # ~30 MB of float32 rows: freed pages are worth giving back
    with closing(SQLiteStore(path)) as store:
        _write_vectors(store, live)
        staged = _unit_vectors(50, seed=1)  # an interrupted re-embedding's vectors are halved too
        store.stage_vectors(EmbeddingIdentity("other-model", DIM, "onnx"), staged)
        revision = store.revision()
    assert {len(b) for b in _blobs(path).values()} == {4 * DIM} and _page_size(path) == 4096

    with closing(SQLiteStore(path)) as store:
        result = compact(store)
        assert result.vectors_halved == len(live) + len(staged)
        assert result.revision == store.revision() == revision + 1
        assert result.bytes_after < 0.6 * result.bytes_before  # the rows are half; the pages went back
        again = store.vectors(live)
        for h, v in live.items():  # the nearest float16, as a store made now keeps
            assert np.array_equal(again[h], v.astype(np.float16).astype(np.float32))
    assert {len(b) for b in _blobs(path).values()} == {2 * DIM}
    assert {len(b) for b in _blobs(path, "vectors_staged").values()} == {2 * DIM}
    assert Path(path).stat().st_size == result.bytes_after  # the WAL was emptied
    assert _page_size(path) == 8192 and _journal_mode(path) == "wal"

    with closing(SQLiteStore(path)) as store:  # a second run has nothing to rewrite
        assert compact(store).vectors_halved == 0 and store.revision() == revision + 1


def test_a_component_float16_cannot_hold_fails_the_whole_rewrite_and_names_the_vector(tmp_path):
    path = tmp_path / "wide.db"
    _older_store(path)
    vectors = _unit_vectors(10_000)
    wide = sorted(vectors)[-1]  # the last batch: the batches before it were rewritten, then rolled back
    vectors[wide] = np.full(DIM, 7e4, dtype=np.float32)
    with closing(SQLiteStore(path)) as store:
        _write_vectors(store, vectors)
        revision, before = store.revision(), _blobs(path)
        with pytest.raises(StoreError, match=rf"vector {wide} of vectors: .*outside float16's range.*nothing was"):
            store.halve_vectors()
        assert store.revision() == revision and store._format == FULL
    assert _blobs(path) == before
    with closing(SQLiteStore(path)) as store:
        assert np.array_equal(store.vectors([wide])[wide], vectors[wide])


def test_a_process_that_had_the_store_open_follows_the_rewrite(tmp_path):
    path = tmp_path / "shared.db"
    _older_store(path)
    first = _unit_vectors(10)
    with closing(SQLiteStore(path)) as reader, closing(SQLiteStore(path)) as halver:
        _write_vectors(reader, first)
        halver.halve_vectors()
        halver.vacuum()  # the page size stays (the reader has the file open), the free pages go back
        assert _page_size(path) == 4096 and _journal_mode(path) == "wal"
        got = reader.vectors(first)  # read with the store's new format, not the one it opened with
        assert all(np.array_equal(got[h], v.astype(np.float16).astype(np.float32)) for h, v in first.items())
        later = _unit_vectors(10, seed=2)
        _write_vectors(reader, later)  # written at float16 too
        assert {len(_blobs(path)[h]) for h in later} == {2 * DIM}
        assert reader.load_vectors("passage")[2].shape == (0, DIM)


def test_compact_refuses_what_is_not_a_sqlite_store_file(tmp_path):
    with pytest.raises(InvalidInput, match=r"^store: hippo compact rewrites a SQLite store file, not 'bolt://"):
        compact_url("bolt://127.0.0.1:7687")
    with pytest.raises(InvalidInput, match=r"^store: no SQLite store at .*missing\.db"):
        compact_url(str(tmp_path / "missing.db"))
    assert not (tmp_path / "missing.db").exists()


def test_hippo_compact_on_an_older_indexed_store_keeps_recall(tmp_path):
    store = tmp_path / "older.db"
    _older_store(store)
    with closing(sqlite3.connect(store)) as db, db:  # indexed by the real encoder below: unbind the test model
        db.execute("DELETE FROM meta WHERE key LIKE 'embedding_%'")
    assert hippo("index", str(SAMPLE / "corpus.json"), "--store", str(store)).returncode == 0
    warned = doctor.store(str(store), Settings())
    assert warned.status == "warn" and "float32" in warned.detail and warned.fix.startswith("hippo compact --store")
    question = "Who governs the island on which the painter Greta Südhof was born?"
    before = json.loads(hippo("recall", question, "--store", str(store), "--json", "-k", "5").stdout)

    done = hippo("compact", "--store", str(store), "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["vectors_halved"] > 500 and result["bytes_after"] < result["bytes_before"]

    after = json.loads(hippo("recall", question, "--store", str(store), "--json", "-k", "5").stdout)
    assert [h["id"] for h in after["hits"]][:3] == [h["id"] for h in before["hits"]][:3]
    assert np.allclose([h["score"] for h in after["hits"]][:3], [h["score"] for h in before["hits"]][:3],
                       rtol=1e-2)
    assert doctor.store(str(store), Settings()).status == "ok"
    neo4j = hippo("compact", "--store", "neo4j://127.0.0.1:7687")
    assert neo4j.returncode == 2 and "store: hippo compact rewrites a SQLite store file" in neo4j.stderr
