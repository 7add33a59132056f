"""The derived state saved beside a SQLite store: used only when current and sound, else rebuilt.

Synthetic text and vectors (``benchmarks.synthetic``) keep these fast; the engine code is the real one.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import faiss
import pytest

from benchmarks.synthetic import SyntheticCorpus, SyntheticEmbedder, SyntheticExtractor
from hippo import Memory, Settings
from hippo.store import SQLiteStore

ROOT = Path(__file__).resolve().parent.parent
CORPUS = SyntheticCorpus(400)
QUERIES = [CORPUS.query(i) for i in (3, 50, 120, 399)]
# Exact search and exact PPR: a state rebuilt from the store must answer exactly alike. (The local push
# visits a vertex's edges in the order they were added, which a rebuild from the store may change: its
# scores then differ within its epsilon bound, as on any graph past ``ppr_exact_max_edges``.)
SMALL: dict = {"ppr_solver": "exact"}
HNSW = {"vector_exact_max": 60}  # HNSW shards at test size


def _open(path: Path, **settings) -> Memory:
    return Memory(SQLiteStore(path), settings=Settings(**{**SMALL, **settings}), embedder=SyntheticEmbedder(),
                  extractor=SyntheticExtractor())


def _outputs(memory: Memory) -> dict:
    # Not graph_stats(): a live state keeps retired vertices, one rebuilt from the store never saw them.
    out = {"passages": memory.graph_stats()["passages"]}
    for q in QUERIES:
        recalled = memory.recall(q, k=10)
        out[f"recall|{q}"] = [(h.id, round(h.score, 7)) for h in recalled.hits]
        out[f"seeds|{q}"] = [s.id for s in recalled.seeds]
        for mode in ("dense", "bm25"):
            out[f"{mode}|{q}"] = [h.id for h in memory.retrieve(q, k=10, mode=mode)]
        out[f"ann|{q}"] = [h.id for h in memory.recall(q, k=5, spaces=["user:ann"]).hits]
    return out


def _rebuilt(path: Path) -> dict:
    memory = _open(path, derived_cache=False)
    try:
        return _outputs(memory)
    finally:
        memory.close()


def _build(path: Path) -> dict:
    memory = _open(path)
    memory.index(CORPUS.documents(0, 200))
    memory.index(CORPUS.documents(200, 300))
    memory.remember("E1v0 r1 E2v0 note.", custom_id="n1", space="user:ann")
    memory.remember("E1v0 r2 E3v0 note.", custom_id="n1", space="user:ann")  # a new version retires the first
    out = _outputs(memory)
    memory.close()
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, dict]:
    path = tmp_path_factory.mktemp("persist") / "s.db"
    return path, _build(path)


def test_a_saved_state_opens_without_rebuilding_and_answers_alike(built):
    path, before = built
    memory = _open(path)
    assert memory.engine.cache.outcome == "loaded"
    assert _outputs(memory) == before == _rebuilt(path)
    memory.close()


def test_an_hnsw_state_round_trips_exactly(tmp_path):
    """Approximate shards are saved as they are: a reopened state answers exactly as the live one."""
    memory = _open(tmp_path / "hnsw.db", **HNSW)
    memory.index(CORPUS.documents(0, 120))
    memory.index(CORPUS.documents(120, 160))
    state = memory.engine.state
    assert {shard.kind for shard in state.facts.shards.values()} == {"hnsw"}
    live = _outputs(memory)
    fitted = lambda memory: [(s.ef, s.near_ef, s.calibrated, s.linked, s.one_ef)  # noqa: E731
                             for s in memory.engine.state.facts.shards.values()]
    calibrated = fitted(memory)
    memory.close()
    reopened = _open(tmp_path / "hnsw.db", **HNSW)
    assert reopened.engine.cache.outcome == "loaded" and _outputs(reopened) == live
    assert fitted(reopened) == calibrated and all(rows > 0 for _, _, rows, _, _ in calibrated)
    reopened.close()


def test_a_state_saved_under_an_older_calibration_is_calibrated_again_once(tmp_path, monkeypatch):
    """A graph whose ``ef`` was fitted by an older rule walks as wide as the current rule asks as soon as
    it is opened, and the state is saved again on close, so later opens do not repeat the scan."""
    from hippo.memory.calibration import CALIBRATION
    from hippo.memory.shards import HnswShard

    memory = _open(tmp_path / "old.db", **HNSW)
    memory.index(CORPUS.documents(0, 160))
    memory.close()
    path = tmp_path / "old.db.hippo" / "MANIFEST.json"
    manifest = json.loads(path.read_text())
    assert manifest["calibration"] == CALIBRATION
    del manifest["calibration"]  # as saved before calibrations were versioned
    for entry in manifest["vectors"].values():
        entry["ef"] = {code: [7, 7, rows] for code, (_, _, rows) in entry["ef"].items()}
    path.write_text(json.dumps(manifest))
    reopened = _open(tmp_path / "old.db", **HNSW)
    graphs = [s for _, index in reopened.engine.state.vector_indexes() for s in index.shards.values()
              if isinstance(s, HnswShard)]
    assert reopened.engine.cache.outcome == "loaded" and graphs
    fitted = [(s.ef, s.near_ef) for s in graphs]
    assert all(ef >= 40 and near_ef > 7 for ef, near_ef in fitted)  # a search's shortlist is 40 wide
    reopened.close()
    assert json.loads(path.read_text())["calibration"] == CALIBRATION

    def scanned(self, gather):
        raise AssertionError("calibrated again on a state saved under the current calibration")

    monkeypatch.setattr(HnswShard, "recalibrated", scanned)
    again = _open(tmp_path / "old.db", **HNSW)
    assert [(s.ef, s.near_ef) for _, index in again.engine.state.vector_indexes() for s in index.shards.values()
            if isinstance(s, HnswShard)] == fitted
    again.close()


def test_a_state_saved_with_stop_54s_graphs_is_rebuilt_with_4_bit_codes_16_links_and_rows_read_from_files(tmp_path):
    """Graphs of 8-bit codes and 32 links (a state saved before stop 55: its shape has no ``code_bits``) are
    not used: the open rebuilds the state, whose graphs hold 4 bits a dimension and 16 links a node, and
    whose vector rows are then read from the saved files by position, answering as the live state did."""
    from hippo.memory.pages import FileRows
    from hippo.memory.shards import HnswShard

    memory = _open(tmp_path / "old.db", **HNSW)
    memory.index(CORPUS.documents(0, 160))
    memory.close()
    path = tmp_path / "old.db.hippo" / "MANIFEST.json"
    manifest = json.loads(path.read_text())
    shape = manifest["shape"]
    assert (shape.pop("code_bits"), shape["links"], shape["build_ef"]) == (4, 16, 200)
    manifest["shape"] = {**shape, "links": 32, "build_ef": 100}
    path.write_text(json.dumps(manifest))
    reopened = _open(tmp_path / "old.db", **HNSW)
    assert reopened.engine.cache.outcome == "stale: settings changed"
    graphs = [s.index.index for _, index in reopened.engine.state.vector_indexes() for s in index.shards.values()
              if isinstance(s, HnswShard)]
    assert graphs
    for graph in graphs:
        graph = faiss.downcast_index(graph)
        codes = faiss.downcast_index(graph.storage).sq
        assert codes.code_size == graph.d // 2 and graph.hnsw.nb_neighbors(1) == 16
    before = _outputs(reopened)
    reopened.close()
    again = _open(tmp_path / "old.db", **HNSW)
    assert again.engine.cache.outcome == "loaded"
    assert all(isinstance(index.store.saved, FileRows) for _, index in again.engine.state.vector_indexes())
    assert _outputs(again) == before
    again.close()


def test_a_mapped_graph_takes_writes_as_the_live_one_did(tmp_path):
    """Reopened HNSW shards are mapped from their files (opening reads nothing of them, and their pages
    are not the process's own memory); the first write copies a shard before adding to it, and the
    store answers exactly as one that stayed open through the same writes."""
    stayed, reopened = _open(tmp_path / "a.db", **HNSW), _open(tmp_path / "b.db", **HNSW)
    for memory in (stayed, reopened):
        memory.index(CORPUS.documents(0, 120))
    reopened.close()
    reopened = _open(tmp_path / "b.db", **HNSW)
    shards = [*reopened.engine.state.facts.shards.values(), *reopened.engine.state.entities.shards.values()]
    assert shards and all(shard.mapped for shard in shards if shard.kind == "hnsw")
    for memory in (stayed, reopened):
        memory.index(CORPUS.documents(120, 160))
    assert not any(getattr(shard, "mapped", False) for shard in reopened.engine.state.facts.shards.values())
    assert _outputs(reopened) == _outputs(stayed)
    stayed.close()
    reopened.close()


def test_opening_reads_the_graphs_and_vectors_ahead_on_a_background_thread(tmp_path, monkeypatch):
    """Mapped files are read through once after opening, so the first recalls do not fault their
    pages in one by one; a file that is gone by then is skipped."""
    import hippo.memory.persist as persist
    from hippo.memory.pages import read_ahead

    memory = _open(tmp_path / "h.db", **HNSW)
    memory.index(CORPUS.documents(0, 120))
    memory.close()
    asked: list[list[Path]] = []
    monkeypatch.setattr(persist, "read_ahead", lambda paths: asked.append(list(paths)) or read_ahead(paths))
    reopened = _open(tmp_path / "h.db", **HNSW)
    assert reopened.engine.cache.outcome == "loaded" and len(asked) == 1
    paths = asked[0]
    assert [p.suffix for p in paths].count(".faiss") == 3  # the graphs of the three kinds, first
    assert paths[0].suffix == ".faiss" and all(p.exists() for p in paths) and len(paths) == 6
    reopened.close()

    def read_bytes() -> int:
        return int(next(line for line in Path("/proc/self/io").read_text().splitlines()
                        if line.startswith("rchar:")).split()[1])

    before = read_bytes()
    thread = read_ahead([tmp_path / "gone.faiss", *paths])
    thread.join(30)
    assert not thread.is_alive() and thread.daemon
    assert read_bytes() - before >= sum(p.stat().st_size for p in paths)


def test_writes_after_opening_go_to_the_journal_and_replay(built, tmp_path):
    path, _ = built
    copy = tmp_path / "s.db"
    _copy_store(path, copy)
    memory = _open(copy)
    memory.index(CORPUS.documents(300, 340))
    memory.forget(custom_id="n1", space="user:ann")
    journal = sorted(copy.with_name("s.db.hippo").glob("journal-*.bin"))
    assert journal and journal[-1].stat().st_size > 0
    live = _outputs(memory)
    memory.engine.cache.close()  # as a crash would: no snapshot at close
    memory.store.close()
    with journal[-1].open("ab") as f:
        f.write(b"HJR1 torn tail of a write that never finished")
    reopened = _open(copy)
    assert reopened.engine.cache.outcome == "loaded"
    assert _outputs(reopened) == live == _rebuilt(copy)
    reopened.remember("E9v0 r1 E8v0 after the torn tail.", space="user:ann")  # the tail is cut off first
    reopened.close()
    again = _open(copy)
    assert again.engine.cache.outcome == "loaded" and _outputs(again) == _rebuilt(copy)
    again.close()


def _copy_store(source: Path, target: Path) -> None:
    import shutil

    shutil.copy(source, target)
    shutil.copytree(source.with_name(source.name + ".hippo"), target.with_name(target.name + ".hippo"))


def _flip_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


CORRUPTIONS = {
    "a graph array flipped": lambda d: _flip_byte(next((d / _gen(d)).glob("graph.run_targets.npy"))),
    "a shard flipped": lambda d: _flip_byte(next((d / _gen(d)).glob("shard-fact-*.matrix.npy"))),
    "vectors truncated": lambda d: os.truncate(next(d.glob("vectors-passage-*.bin")), 1000),
    "a file missing": lambda d: next((d / _gen(d)).glob("keywords.vocabulary.npy")).unlink(),
    "manifest garbage": lambda d: (d / "MANIFEST.json").write_text("{not json"),
}


def _gen(directory: Path) -> str:
    return json.loads((directory / "MANIFEST.json").read_text())["generation"]


@pytest.mark.parametrize("damage", sorted(CORRUPTIONS))
def test_a_corrupt_saved_state_is_detected_and_rebuilt(built, tmp_path, damage):
    path, before = built
    copy = tmp_path / "s.db"
    _copy_store(path, copy)
    CORRUPTIONS[damage](copy.with_name("s.db.hippo"))
    memory = _open(copy)
    assert memory.engine.cache.outcome.startswith("corrupt")
    assert _outputs(memory) == before
    memory.close()
    again = _open(copy)  # rebuilt and saved again
    assert again.engine.cache.outcome == "loaded"
    again.close()


def test_an_unchanged_file_is_not_read_again_and_a_changed_one_is(built, tmp_path, monkeypatch):
    """The checksums of files unchanged since their last check (size, time, inode) are not read again
    on open; a file written since is read whole, and damage is found as before."""
    import hippo.memory.checks as checks

    path, before = built
    copy = tmp_path / "s.db"
    _copy_store(path, copy)
    _open(copy).close()  # a copy is read whole once, and stamped
    read = []
    real = checks.crc32
    monkeypatch.setattr(checks, "crc32", lambda p, size=None: read.append(p.name) or real(p, size))
    memory = _open(copy)
    assert memory.engine.cache.outcome == "loaded" and read == []
    memory.close()
    _flip_byte(next((copy.with_name("s.db.hippo") / _gen(copy.with_name("s.db.hippo"))).glob("graph.run_targets.npy")))
    memory = _open(copy)
    # the one file read to check it is the damaged one (the rebuild then writes and sums new files)
    assert read[0] == "graph.run_targets.npy" and memory.engine.cache.outcome.startswith("corrupt")
    assert _outputs(memory) == before
    memory.close()


def test_a_stale_or_foreign_saved_state_is_never_used(built, tmp_path):
    path, _ = built
    copy = tmp_path / "s.db"
    _copy_store(path, copy)
    other = _open(copy, derived_cache=False)  # another writer that keeps no saved state
    other.index(CORPUS.documents(340, 360))
    other.close()
    memory = _open(copy)
    assert memory.engine.cache.outcome.startswith("stale: saved revision")
    assert _outputs(memory) == _rebuilt(copy)
    memory.close()
    changed = _open(copy, relation_weight=2.0)
    assert changed.engine.cache.outcome == "stale: settings changed"
    changed.close()
    fresh = tmp_path / "fresh.db"  # a new store where an old one's saved state was left behind
    SQLiteStore(fresh).close()
    _copy_store(path, tmp_path / "x.db")
    (tmp_path / "x.db.hippo").rename(tmp_path / "fresh.db.hippo")
    foreign = _open(fresh)
    assert foreign.engine.cache.outcome == "stale: another store or format"
    assert foreign.stats().passages == 0 and not foreign.recall(QUERIES[0]).hits
    foreign.close()


CHILD = """
import sys
sys.path.insert(0, {root!r})
import hippo.memory.fold as fold
from benchmarks.synthetic import SyntheticCorpus, SyntheticEmbedder, SyntheticExtractor
from hippo import Memory, Settings
from hippo.store import SQLiteStore
if {fold}:
    fold.COMPACT_MIN, fold.COMPACT_RATIO = 0, 0.0  # every write saves a whole new snapshot
corpus = SyntheticCorpus(400)
memory = Memory(SQLiteStore({path!r}), embedder=SyntheticEmbedder(), extractor=SyntheticExtractor())
i = 300
while True:
    memory.index(corpus.documents(i, i + 4))
    memory.remember(f"E{{i}}v0 r1 E{{i + 1}}v0 note {{i}}.", custom_id=f"n{{i % 3}}", space="user:ann")
    i = 300 + (i - 300 + 4) % 100
    print(i, flush=True)
"""


@pytest.mark.parametrize("fold", [False, True], ids=["journal", "snapshot"])
def test_kill_9_during_index_updates_leaves_a_store_that_opens_and_recalls(built, tmp_path, fold):
    path, _ = built
    copy = tmp_path / "s.db"
    _copy_store(path, copy)
    code = CHILD.format(root=str(ROOT), path=str(copy), fold=fold)
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    try:
        for _ in range(3):  # a few writes in, then mid-write
            assert child.stdout.readline(), "the writer died on its own"
        time.sleep(0.05 if fold else 0.02)
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.kill()
        child.wait()
    memory = _open(copy)
    assert memory.engine.cache.outcome == "loaded" or memory.engine.cache.outcome.startswith("stale")
    assert _outputs(memory) == _rebuilt(copy)
    memory.close()


DYING = """
import os, sys
sys.path.insert(0, {root!r})
import hippo.memory.state as state
from benchmarks.synthetic import SyntheticCorpus, SyntheticEmbedder, SyntheticExtractor
from hippo import Memory, Settings
from hippo.store import SQLiteStore
memory = Memory(SQLiteStore({path!r}), settings=Settings(ppr_solver="exact"), embedder=SyntheticEmbedder(),
                extractor=SyntheticExtractor())
memory.index(SyntheticCorpus(400).documents(300, 304))
follow = state.DerivedState.apply_delta
def dying(self, delta):
    follow(self, delta)
    os._exit(9)  # the store committed the write and the state followed it; nothing of the process after
state.DerivedState.apply_delta = dying
memory.index(SyntheticCorpus(400).documents(304, 308))
"""


def test_a_kill_while_the_state_follows_a_write_costs_a_replay_not_a_rebuild(built, tmp_path):
    # The write is journaled before the state follows it (the graph inserts, half a large write's time):
    # journaled after, a kill there left the saved state a revision behind, and the next open rebuilt it all.
    path, _ = built
    copy = tmp_path / "s.db"
    _copy_store(path, copy)
    store = SQLiteStore(copy)
    before = store.revision()
    store.close()
    done = subprocess.run([sys.executable, "-c", DYING.format(root=str(ROOT), path=str(copy))], capture_output=True,
                          text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"}, timeout=600)
    assert done.returncode == 9, done.stderr[-2000:]
    memory = _open(copy)
    assert memory.engine.cache.outcome == "loaded"
    assert memory.store.revision() == before + 2  # the write the kill came in is in the store, and followed
    assert _outputs(memory) == _rebuilt(copy)
    memory.close()
