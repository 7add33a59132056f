"""The derived state saved for a store, so opening it does not rebuild.

Layout of its folder (``hippo.memory.home``: ``<store>.db.hippo/`` beside a SQLite file):

- ``MANIFEST.json``: format, the store's id and the revision saved, the settings
  that shape the state, and every file with its size and CRC-32;
- ``gen-<n>/``: one snapshot (arrays as ``.npy``, HNSW graphs as faiss files),
  written into a new directory (a graph that has not grown since the last one
  is hard-linked from it), then made current by replacing the manifest
  atomically;
- ``vectors-<kind>-<dtype>.bin``: every vector of a kind, rows appended by each
  snapshot and shared by all of them (the manifest says how many rows are
  valid), read by position when opened (``hippo.memory.pages``);
- ``journal-<n>.bin``: the writes since snapshot ``n`` (``hippo.memory.delta``),
  one checksummed record each, appended just before the store commits them (a
  record is replayed only once the store holds its write's id), and folded into
  a new snapshot when ``hippo.memory.fold`` finds it due.

Opening checks the store id, the settings, every file's size and checksum,
then replays the journal; it uses the result only if it reached the store's
current revision. Anything else (missing, stale, corrupt, another store,
other settings) is reported in ``outcome`` and the engine rebuilds from the
store, then saves. A crash at any point leaves either the old manifest with
its files intact, or a torn journal tail that is cut off.

One process at a time keeps the files (an exclusive ``flock`` on ``lock``);
others may read them. A Neo4j database written by processes on several machines
has a folder on each: each follows the revision, so a copy another machine's
write made stale is rebuilt, never used.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import shutil
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path

import faiss
import numpy as np

from hippo.columns import Column
from hippo.config import Settings
from hippo.errors import StoreError
from hippo.graph.projection import GraphProjection
from hippo.memory.calibration import CALIBRATION, outdated
from hippo.memory.checks import Checks, Corrupt, fsync_dir, fsync_file
from hippo.memory.delta import KINDS, Delta
from hippo.memory.flat import FlatShard
from hippo.memory.fold import FoldPolicy, folds_kept
from hippo.memory.home import kept_state_home, shape_key, state_home, store_id
from hippo.memory.journal import append_record, cut_at, read_records
from hippo.memory.keywords import KeywordIndex
from hippo.memory.pages import read_ahead, save_rows, saved_rows
from hippo.memory.segments import graphs_of, joined
from hippo.memory.shards import NEAR_FROM, HnswShard
from hippo.memory.state import DerivedState, ann_settings
from hippo.memory.titles import TitleIndex
from hippo.memory.vectors import VectorIndex, VectorStore
from hippo.store.base import Store

log = logging.getLogger("hippo.persist")
FORMAT = 3  # 3: passage titles (issue 14's title seeds)

Exclusive = Callable[[], AbstractContextManager]


def graph_file(generation: str, kind: str, key: str) -> str:
    """A graph's file in a snapshot, as the manifest names it (``key``: ``segments.graphs_of``)."""
    return f"{generation}/shard-{kind}-{key}.faiss"


def load_state(store: Store, settings: Settings, dim: int, cache: DerivedCache | None) -> DerivedState:
    """The derived state at the store's revision: the saved copy when it is current and sound
    (``cache.outcome`` says), else rebuilt from the store and saved."""
    state = cache.load(store, settings, dim) if cache is not None else None
    if state is None:
        state = DerivedState.load(store, dim, settings)
        if cache is not None:
            cache.save(state)  # not shared with readers yet: no lock needed
    return state


class DerivedCache:
    def __init__(self, directory: Path, identity: str, shape: dict) -> None:
        self.directory, self.identity, self.shape = directory, identity, shape
        self.outcome = "unopened"  # what the last load found: loaded, missing, stale, corrupt: ..., ...
        self.owner, self._lock_file = False, None
        self._manifest: dict | None = None
        self._fold = FoldPolicy()  # the journal's bytes and replay cost against a fold's
        self._pending = 0  # the bytes of the record ``journal`` wrote last that ``settle`` has not counted yet
        self._mutex = threading.RLock()  # a close may come while a writer records
        directory.mkdir(parents=True, exist_ok=True)
        self._take_lock()

    @classmethod
    def for_store(cls, store: Store, settings: Settings, dim: int) -> DerivedCache | None:
        """The saved state of ``store`` (``hippo.memory.home``), or None where none is kept: turned
        off, an in-memory store, or a store that may not be written its id (a read-only Neo4j user)."""
        if not settings.derived_cache or not kept_state_home(store):
            return None
        try:
            identity = store_id(store)
        except StoreError as exc:
            log.info("no saved derived state for %s: %s", store, exc)
            return None
        return cls(state_home(store, identity, settings.derived_dir), identity, shape_key(settings, dim))

    def _take_lock(self) -> None:
        self._lock_file = (self.directory / "lock").open("a+")
        try:
            fcntl.flock(self._lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
            self.owner = True
        except OSError:  # another process (or memory) keeps the files: read them, never write
            self.owner = False

    def close(self, state: DerivedState | None = None, exclusive: Exclusive = nullcontext) -> None:
        with self._mutex:
            if state is not None and self.owner and self._manifest is not None \
                    and (self._fold.due_at_close() or self._calibrated_since(state)):
                self.save(state, exclusive)
            if self._lock_file is not None:
                self._lock_file.close()
                self._lock_file, self.owner = None, False

    def _calibrated_since(self, state: DerivedState) -> bool:
        """Whether a graph was calibrated again since the saved state (or on opening it, saved under
        another calibration): saving it spares every later open the same calibration (a full scan)."""
        assert self._manifest is not None
        if outdated(self._manifest.get("calibration")):
            return True
        saved = self._manifest["vectors"]
        return any(rows != (saved[kind].get("ef", {}).get(code, []) + [0, 0, 0])[2]
                   for kind, index in state.vector_indexes()
                   for code, rows in index.calibrations().items())

    # -- loading -------------------------------------------------------------------

    def _read_manifest(self) -> dict | None:
        path = self.directory / "MANIFEST.json"
        if not path.exists():
            return None
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise Corrupt(f"MANIFEST.json unreadable ({exc})") from exc

    def load(self, store: Store, settings: Settings, dim: int) -> DerivedState | None:
        """The saved state at the store's current revision, or None (``outcome`` says why)."""
        try:
            if (manifest := self._read_manifest()) is None:
                self.outcome = "missing"
                return None
            if manifest.get("format") != FORMAT or manifest.get("store_id") != self.identity:
                self.outcome = "stale: another store or format"
                return None
            if manifest.get("shape") != self.shape:
                self.outcome = "stale: settings changed"
                return None
            self._verify(manifest)
            state = self._restore(manifest, settings, dim)
            clock = time.perf_counter()
            self._fold = FoldPolicy.of(manifest)
            self._fold.followed(self._replay(manifest, state, store), time.perf_counter() - clock)
        except Corrupt as exc:
            self.outcome = f"corrupt: {exc}"
            log.warning("derived state in %s not used (%s); rebuilding from the store", self.directory, exc)
            return None
        except Exception as exc:  # whatever a damaged file makes numpy or faiss raise: rebuild
            self.outcome = f"corrupt: {type(exc).__name__}: {exc}"
            log.warning("derived state in %s unreadable (%s); rebuilding from the store", self.directory, exc)
            return None
        current = store.revision()
        if state.revision != current:
            self.outcome = f"stale: saved revision {state.revision}, store at {current}"
            return None
        self._manifest = manifest
        self.outcome = "loaded"
        return state

    def _verify(self, manifest: dict) -> None:
        """Every file against its size and CRC-32 (read again only when it changed: ``checks``)."""
        checks = Checks(self.directory)
        for name, entry in manifest["files"].items():
            checks.verify(name, self.directory / name, entry)
        if self.owner:
            checks.keep_only(set(manifest["files"]))
            checks.save()

    def _restore(self, manifest: dict, settings: Settings, dim: int) -> DerivedState:
        gen = self.directory / manifest["generation"]

        def arrays(prefix: str) -> dict[str, np.ndarray]:
            return {path.name[len(prefix) + 1 : -4]: np.load(path, allow_pickle=False)
                    for path in sorted(gen.glob(f"{prefix}.*.npy"))}

        projection = GraphProjection.from_arrays(arrays("graph"), manifest["spaces"])
        spaces = {int(code): arrays(f"keywords-{code}") for code in manifest["keyword_spaces"]}
        keywords = KeywordIndex.from_arrays(arrays("keywords"), spaces)
        titles = TitleIndex.from_arrays(arrays("titles"))
        # saved under another calibration: each graph walks as wide as it asks for now (one exact scan of its rows)
        recalibrate = outdated(manifest.get("calibration"))
        indexes = {}
        for kind in KINDS:
            saved = manifest["vectors"][kind]
            ann = ann_settings(settings, kind)
            index = VectorIndex(dim, ann)
            if saved["rows"]:
                index.store = VectorStore(dim, saved_rows(self.directory / saved["file"], saved["dtype"],
                                                          (saved["rows"], dim)))
            own = arrays(f"vectors-{kind}")
            index.keys = Column(np.uint64, own["keys"])
            index.label_of = Column(np.int64, own["label_of"])
            slots = np.full(int(own["label_of"].max()) + 1 if len(own["label_of"]) else 0, -1, dtype=np.int64)
            slots[own["label_of"]] = np.arange(len(own["label_of"]))
            index.slot_of = Column(np.int64, slots)
            graphs = {}  # by key: a shard's code, or ``code.n`` for its graph n past the first (``graphs_of``)
            for code, kind_of_shard in saved["shards"].items():
                if kind_of_shard == "flat":
                    index.shards[int(code)] = FlatShard.from_arrays(dim, arrays(f"shard-{kind}-{code}"))
                else:
                    dead = np.load(gen / f"shard-{kind}-{code}.dead.npy", allow_pickle=False)
                    ef, near_ef, calibrated = (ann.min_ef, NEAR_FROM, 0) if recalibrate else (*saved["ef"][code], 0)[:3]
                    name = graph_file(manifest["generation"], kind, code)
                    graphs[code] = HnswShard.mapped_from(  # ``linked``, ``one_ef``: not in older states
                        str(self.directory / name), ann, ef, near_ef, calibrated, dead=dead,
                        linked=saved.get("linked", {}).get(code), one_ef=saved.get("one_ef", {}).get(code))
                    graphs[code].saved_as = name
            index.shards.update(joined(graphs, ann))
            if recalibrate and index.calibrate():
                log.info("derived state in %s: %s graphs calibrated again (saved under calibration %s)",
                         self.directory, kind, manifest.get("calibration", 1))
            indexes[kind] = index
        # every search walks the graphs; the vectors only re-rank: graphs first
        read_ahead(sorted(gen.glob("shard-*.faiss"))
                   + [self.directory / manifest["vectors"][kind]["file"] for kind in KINDS
                      if manifest["vectors"][kind]["rows"]])
        return DerivedState(revision=manifest["revision"], projection=projection, passages=indexes["passage"],
                             entities=indexes["entity"], facts=indexes["fact"], keywords=keywords, titles=titles,
                             unembedded={(k, rid) for k, rid in manifest["unembedded"]})

    def _replay(self, manifest: dict, state: DerivedState, store: Store) -> int:
        """Apply the journal's records whose writes the store committed; returns the bytes of those. The
        last record may stand for a write killed before its commit: unless the store's revision and write
        id are its own, it is dropped (one the store went past is replayed, and the state found stale)."""
        path = self.directory / manifest["journal"]
        revision, write_id = store.last_write()
        good = 0
        for payload, end in read_records(path):
            delta = Delta.from_bytes(payload)
            if delta.write_id is not None and delta.revision >= revision \
                    and (delta.revision, delta.write_id) != (revision, write_id):
                log.warning("journal %s: the write of revision %d was never committed; its record is dropped",
                            path, delta.revision)
                if self.owner:
                    cut_at(path, good)
                break
            if delta.revision != state.revision + 1 or not state.apply_delta(delta):
                raise Corrupt(f"journal record for revision {delta.revision} does not follow {state.revision}")
            good = end
        return good

    # -- saving --------------------------------------------------------------------

    def journal(self, delta: Delta) -> None:
        """Append a write before the store commits it: a kill after the commit (its checkpoint, the
        state's graph inserts) costs the next open a replay, not a rebuild of everything (3,000 passages:
        7.7 s against 26.4). ``settle`` counts the record once the state followed, or cuts it; until then
        the next one writes over it."""
        with self._mutex:
            self._pending = 0
            if self.owner and self._manifest is not None:
                self._pending = append_record(self._journal_path, self._fold.journal_bytes, delta.to_bytes())

    def settle(self, state: DerivedState | None, exclusive: Exclusive = nullcontext, seconds: float = 0.0) -> None:
        """After ``journal``: the state followed in ``seconds`` (the record counts; a journal ``FoldPolicy``
        finds due is folded), or None: the write did not commit, or the state is loaded again (the record
        is dropped)."""
        with self._mutex:
            pending, self._pending = self._pending, 0
            if not self.owner:
                return
            if state is None:
                if pending:
                    cut_at(self._journal_path, self._fold.journal_bytes)
                return
            self._fold.followed(pending, seconds)
            if self._manifest is None or self._fold.due():
                self.save(state, exclusive)

    @property
    def _journal_path(self) -> Path:
        return self.directory / self._manifest["journal"]

    def save(self, state: DerivedState, exclusive: Exclusive = nullcontext) -> None:
        """Write ``state`` as a new snapshot and make it current (owner only).

        Writing needs no lock against readers (it only reads the state); the
        vector stores then switch to the new files inside ``exclusive()``, the
        engine's write section, so no reader sees them change."""
        if not self.owner:
            return
        clock = time.perf_counter()
        old = self._manifest
        # A new number never used here: another process may be reading any file named so far.
        number = 1 + max([int(p.name.split("-")[1]) for p in self.directory.glob("gen-*") if p.is_dir()] or [0])
        gen_name = f"gen-{number}"
        gen = self.directory / gen_name
        gen.mkdir()
        files: dict[str, dict] = {}
        checks = Checks(self.directory)

        def put(name: str, values: np.ndarray) -> None:
            path = gen / f"{name}.npy"
            np.save(path, np.ascontiguousarray(values), allow_pickle=False)
            files[f"{gen_name}/{path.name}"] = checks.written(f"{gen_name}/{path.name}", path)

        for prefix, part in (("graph", state.projection), ("keywords", state.keywords), ("titles", state.titles)):
            for name, values in part.arrays().items():
                put(f"{prefix}.{name}", values)
        for code, space in state.keywords.spaces.items():
            for name, values in space.arrays(len(state.keywords.vocabulary)).items():
                put(f"keywords-{code}.{name}", values)
        vectors = {}
        for kind, index in state.vector_indexes():
            put(f"vectors-{kind}.keys", index.keys.values)
            put(f"vectors-{kind}.label_of", index.label_of.values)
            entry = save_rows(self.directory, kind, index.store, old, files, number)
            if entry["file"] in files:
                checks.written(entry["file"], self.directory / entry["file"], files[entry["file"]])
            entry["shards"], entry["ef"], entry["linked"], entry["one_ef"] = {}, {}, {}, {}
            for code, shard in index.shards.items():
                if isinstance(shard, FlatShard):
                    entry["shards"][str(code)] = shard.kind
                    for name, values in shard.arrays().items():
                        put(f"shard-{kind}-{code}.{name}", values)
                    continue
                for key, graph in graphs_of(code, shard):
                    entry["shards"][key] = graph.kind
                    name = graph_file(gen_name, kind, key)
                    files[name] = self._save_graph(graph, name, old, checks)
                    put(f"shard-{kind}-{key}.dead", graph.dead_labels())
                    entry["ef"][key], entry["linked"][key], entry["one_ef"][key] = \
                        [graph.ef, graph.near_ef, graph.calibrated], graph.linked, graph.one_ef
            vectors[kind] = entry
        for path in gen.iterdir():
            fsync_file(path)
        fsync_dir(gen)
        manifest = {
            "format": FORMAT, "store_id": self.identity, "shape": self.shape, "revision": state.revision,
            "calibration": CALIBRATION, "generation": gen_name, "journal": f"journal-{number}.bin", "files": files,
            "vectors": vectors, "spaces": state.projection.space_names, "keyword_spaces": sorted(state.keywords.spaces),
            "unembedded": sorted(state.unembedded), "bytes": sum(f["bytes"] for f in files.values()),
            "fold_seconds": folds_kept(old, time.perf_counter() - clock),
        }
        temporary = self.directory / "MANIFEST.json.tmp"
        temporary.write_text(json.dumps(manifest), encoding="utf-8")
        fsync_file(temporary)
        os.replace(temporary, self.directory / "MANIFEST.json")
        fsync_dir(self.directory)
        checks.keep_only(set(files))
        checks.save()
        self._manifest, self._fold, self._pending = manifest, FoldPolicy.of(manifest), 0
        with exclusive():
            for kind, index in state.vector_indexes():
                entry = vectors[kind]
                if entry["rows"]:
                    index.store.attach(saved_rows(self.directory / entry["file"], entry["dtype"],
                                                  (entry["rows"], index.dim)))
        self._sweep(keep={gen_name, manifest["journal"], *(v["file"] for v in vectors.values())})

    def _save_graph(self, graph: HnswShard, name: str, old: dict | None, checks: Checks) -> dict:
        """Write a graph's file, or link the last snapshot's when the graph has not grown since: a full
        2M-row graph of facts is ~1 GB that every fold rewrote unchanged."""
        path, kept = self.directory / name, graph.saved_as
        if kept is not None and old is not None and kept in old["files"]:
            try:
                os.link(self.directory / kept, path)
            except OSError:  # gone, or a file system without hard links: written below
                pass
            else:
                graph.saved_as = name
                return checks.written(name, path, old["files"][kept])
        faiss.write_index(graph.index, str(path))
        graph.saved_as = name
        return checks.written(name, path)

    def _sweep(self, keep: set[str]) -> None:
        """Remove generations, journals and vector files no manifest names any more."""
        for path in self.directory.iterdir():
            if path.name in keep or path.name in ("MANIFEST.json", "lock"):
                continue
            if path.name.startswith(("gen-", "journal-", "vectors-")) or path.name.endswith(".tmp"):
                shutil.rmtree(path) if path.is_dir() else path.unlink(missing_ok=True)
