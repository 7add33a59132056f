"""One space's vectors of one kind, searched exactly while small and by faiss HNSW when large.

A shard holds the records a reader of its space may find: a forgotten record
leaves it (and comes back on restore), so a search never filters a shortlist
afterwards and a small space in a huge store still returns its true top k.

- ``FlatShard`` (``hippo.memory.flat``): a float32 matrix, scored exactly, up to
  ``AnnSettings.exact_max`` rows.
- ``HnswShard``: faiss ``IndexHNSWSQ`` (``code_bits`` codes, ``links`` per node, inner
  product) under an ``IndexIDMap`` (labels = the records' rows). A search walks
  the graph with ``ef`` candidates and the ``rerank_margin`` + ``rerank`` x k best
  (``rerank_many`` x k for a search for many) go back to exact
  scoring against the full vectors. ``ef`` is calibrated when the graph is
  built: the smallest whose re-ranked top 10 holds ``recall`` (0.99) of the
  exact top 10 for noisy copies of held vectors (on MuSiQue such copies and the
  real query phrases are as hard) and, in the kinds a whole question searches
  (passages, facts), for blends of two held vectors that are not close (a
  question names two things a passage joins: on the 100k synthetic store's
  million facts, noisy copies called 192 enough where its questions needed ~648
  for 0.98); ``near_ef`` likewise for copies at cosine ~0.8, the synonym search;
  ``one_ef`` for the best one alone (an entity link asks one; on the 100k synthetic
  store's 239k entities its phrases found their nearest at ef 144 every time, where
  the top-10 width is 648), never below ``min_ef``.
  Adds go straight into the graph, calibrated again each time it grows by half. HNSW cannot delete:
  a removed record is skipped inside the search (a faiss ID selector, so the k returned are k live
  ones), and the graph is rebuilt when a quarter is dead, and whole once as it grows past
  ``wide_build_from`` (``AnnSettings.rebuilds``: wider, ``wide_links`` links a node).
- ``SegmentedShard`` (``hippo.memory.segments``): past ``AnnSettings.graph_rows``, several such graphs.

IVF (PQ or SQ codes) was measured first and dropped: on MiniLM vectors (MuSiQue's 21k entities)
recall@10 0.98 needed every list probed (a scan).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import faiss
import numpy as np
from threadpoolctl import ThreadpoolController

from hippo.columns import Column
from hippo.memory.ann import AnnSettings, Gather
from hippo.memory.calibration import best_ten, calibration_queries, found_share, narrowest_width
from hippo.memory.flat import top_k

# faiss' OpenMP team, like igraph's, spins against the other busy core: on 2 shared cores
# building an index took 62 s with two threads and 15 s with one (21k vectors, load ~20).
faiss.omp_set_num_threads(1)
TEAM_FROM = 256  # vectors added, or queries searched, from which one call gets every core


@contextmanager
def _team(size: int) -> Iterator[None]:
    """Every core for one large call (a write's batch of adds, the synonym search of its new entities):
    measured on a quiet machine, 20k synthetic passages indexed in 138 s instead of 176. From 256 rather
    than 1,024 (stop 64), a default write's passages (256 documents) and most of its new entities and
    their synonym searches join its facts on every core: 20k passages in 147.7 and 155.3 s against
    164.0 and 170.3 (two rounds, order swapped; ``benchmarks/scale.py``'s build). A recall's searches
    stay on one thread; the setting is the calling thread's own, so readers keep theirs."""
    threads = min(os.cpu_count() or 1, 8) if size >= TEAM_FROM else 1
    if threads <= 1:
        yield
        return
    faiss.omp_set_num_threads(threads)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(1)


def _single_threaded_blas() -> None:
    """numpy's (and faiss') OpenBLAS at one thread for the process's life (torch keeps its own):
    on 2 busy cores their spinning threads made a 3,000 x 384 matrix-vector product take 10 ms
    instead of 0.2 (measured, load ~7), on every exact search."""
    controller = ThreadpoolController()
    found = [lib.filepath for lib in controller.lib_controllers
             if lib.user_api == "blas" and "torch" not in (lib.filepath or "")]
    if found:
        controller.select(filepath=found).limit(limits=1)


_single_threaded_blas()

CHUNK = 65_536  # vectors gathered at a time when building a graph (each chunk scored by the calibration queries too)
CODES = {4: faiss.ScalarQuantizer.QT_4bit, 6: faiss.ScalarQuantizer.QT_6bit, 8: faiss.ScalarQuantizer.QT_8bit}
NEAR_FROM = 16  # the narrowest walk a near (synonym) search is calibrated from: its neighbours are close


def _identity(path: str) -> tuple[int, int, int, int]:
    """Which file a path names now: a file replaced under the same name differs in one of these."""
    stat = os.stat(path)
    return stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns


class HnswShard:
    kind = "hnsw"

    def __init__(self, index: faiss.IndexIDMap, settings: AnnSettings, ef: int, near_ef: int,
                 dead: np.ndarray | None = None, mapped: bool = False, calibrated: int = 0,
                 linked: int | None = None, one_ef: int | None = None) -> None:
        self.index = index
        self.mapped = mapped  # read from a saved file by mapping it: read-only until ``add`` copies it
        self.settings = settings
        self.ef, self.near_ef, self.calibrated = ef, near_ef, calibrated  # calibrated: live rows at the last fit
        self.one_ef = ef if one_ef is None else one_ef  # a search for one: unknown in older states, as wide as ef
        # The narrowest efConstruction any row was linked at (the graph's field keeps the last); unknown in
        # a state saved before it was kept: a graph past ``wide_build_from`` is taken as grown past it.
        width = faiss.downcast_index(index.index).hnsw.efConstruction
        self.linked = linked if linked is not None else width if index.ntotal < settings.wide_build_from \
            else min(width, settings.build_ef)
        self._held = Column(bool)  # by label
        self._dead = Column(bool)
        ids = faiss.vector_to_array(index.id_map)
        if len(ids):
            self._held.extend_to(int(ids.max()) + 1)
            self._held[ids] = True
        self._dead.extend_to(len(self._held))
        if dead is not None and len(dead):
            self._dead[dead] = True
        self._dead_count = int(self._dead.values.sum())
        self._selector = None
        self._source: tuple[str, tuple[int, int, int, int]] | None = None  # a mapped graph's file, and which
        self.saved_as: str | None = None  # the saved state's file holding this graph as it is (``persist``)

    @classmethod
    def built(cls, labels: np.ndarray, gather: Gather, settings: AnnSettings, rows: int | None = None,
              trained_on: np.ndarray | None = None) -> HnswShard:
        """A graph of these labels' vectors (gathered in chunks: a shard may not fit in memory as
        float32), linked as a graph of ``rows`` (default: as many as the labels), its codes' ranges
        drawn from ``trained_on`` (default: the labels), with ``ef`` calibrated (``calibration_queries``)."""
        labels = np.asarray(labels, dtype=np.int64)
        rng, dim, rows = np.random.default_rng(len(labels)), gather(labels[:1]).shape[1], rows or len(labels)
        base = faiss.IndexHNSWSQ(dim, CODES[settings.code_bits], settings.links_for(rows), faiss.METRIC_INNER_PRODUCT)
        base.hnsw.efConstruction = settings.build_width(rows)
        index = faiss.IndexIDMap(base)
        pool = labels if trained_on is None else np.asarray(trained_on, dtype=np.int64)
        sample = pool[np.sort(rng.choice(len(pool), min(len(pool), 65_536), replace=False))]
        index.train(np.ascontiguousarray(gather(sample), dtype=np.float32))  # the codes' ranges
        parts = calibration_queries(labels, gather, settings, rng)
        queries = np.concatenate(parts)
        best = np.full((len(queries), 10), -np.inf, dtype=np.float32)
        for start in range(0, len(labels), CHUNK):  # add, and find the exact top 10 on the way
            part = labels[start : start + CHUNK]
            vectors = np.ascontiguousarray(gather(part), dtype=np.float32)
            with _team(len(part)):
                index.add_with_ids(vectors, part)
            best = best_ten(best, queries @ vectors.T)
        shard = cls(index, settings, ef=settings.max_ef, near_ef=settings.max_ef, linked=base.hnsw.efConstruction)
        shard._calibrated_on(parts, best, gather)
        return shard

    def recalibrated(self, gather: Gather) -> HnswShard:
        """This graph with ``ef`` and ``near_ef`` calibrated again for the rows it holds now: a graph
        grown by adds needs a wider walk than the one calibrated when it was small (a facts graph
        calibrated at 20k rows found 0.89 of the true top 10 at 3M). One exact scan of every row, so
        ``add`` asks for it each time the graph grows by half: amortized O(1) a row. From ``min_ef``, not from
        the width before: each fit is of 128 queries, so one that started where the last stopped kept
        the widest of every draw (the 100k store's entities walked at 648 where a fit of the whole graph
        asks 128, and its phrases find 0.992 of their top 10 there)."""
        labels = self.labels()
        parts = calibration_queries(labels, gather, self.settings, np.random.default_rng(len(labels)))
        queries = np.concatenate(parts)
        best = np.full((len(queries), 10), -np.inf, dtype=np.float32)
        for start in range(0, len(labels), CHUNK):
            best = best_ten(best, queries @ np.asarray(gather(labels[start : start + CHUNK]), np.float32).T)
        self._calibrated_on(parts, best, gather)
        return self

    def needs_calibration(self) -> bool:
        return len(self) >= self.settings.recalibrate_growth * self.calibrated

    def _calibrated_on(self, parts: list[np.ndarray], best: np.ndarray, gather: Gather) -> None:
        """``ef``: the widest walk any far part of the queries needs; ``one_ef``: the widest a search
        for the best one needs (an entity link); both from ``min_ef``; ``near_ef``: the last part's,
        from ``NEAR_FROM``. ``best``: every query's exact top 10, the parts one after another."""
        bests = np.split(best, np.cumsum([len(part) for part in parts])[:-1])
        far = list(zip(parts[:-1], bests[:-1], strict=True))
        ef = self.settings.min_ef
        for part, exact in far:
            ef = self._calibrate(part, exact, gather, ef)  # from the width the part before needed
        self.ef = ef
        self.one_ef = min(ef, max(self._calibrate(part, exact, gather, self.settings.min_ef, top=1)
                                  for part, exact in far))
        self.near_ef = self._calibrate(parts[-1], bests[-1], gather, NEAR_FROM, self.settings.near_floor)
        self.calibrated = len(self)

    def _calibrate(self, queries: np.ndarray, best: np.ndarray, gather: Gather, ef: int,
                   floor: float = -np.inf, top: int = 10) -> int:
        """The narrowest ``ef`` (from ``ef``) whose re-ranked best ``top`` holds ``settings.recall`` of
        the exact best ``top`` at or above ``floor`` (``calibration.narrowest_width``)."""
        return narrowest_width(lambda width: found_share(self.search(queries, top, gather, ef=width), best, floor, top),
                               max(ef, self._shortlist(top)), self.settings)  # a search walks its shortlist at least

    def _shortlist(self, k: int) -> int:
        """Candidates a search for k re-scores exactly (and the least width faiss walks)."""
        s = self.settings
        return int(max(s.min_rerank, s.rerank_margin + (s.rerank_many if k > s.many else s.rerank) * k))

    def __len__(self) -> int:
        return int(self.index.ntotal) - self._dead_count

    def holds(self, labels: np.ndarray) -> np.ndarray:
        """Per label, whether it is in this graph (live or removed)."""
        held = np.zeros(len(labels), dtype=bool)
        inside = labels < len(self._held)
        held[inside] = self._held[labels[inside]]
        return held

    def labels(self) -> np.ndarray:
        """Every live label held (O(rows))."""
        ids = faiss.vector_to_array(self.index.id_map)
        return ids[~self._dead[ids]]

    def dead_labels(self) -> np.ndarray:
        return np.flatnonzero(self._dead.values)

    @property
    def links(self) -> int:
        """HNSW M: the links a node keeps above the base layer (twice that in it)."""
        return int(faiss.downcast_index(self.index.index).hnsw.nb_neighbors(1))

    def narrower_than(self, rows: int) -> bool:
        """Whether growing this graph to ``rows`` builds it again whole (``AnnSettings.rebuilds``)."""
        return self.settings.rebuilds(self.linked, self.links, len(self), rows)

    def relinkable(self) -> bool:
        """Whether this graph is linked as one of its size is not built today (``VectorIndex.relink``)."""
        return self.settings.rebuilds(self.linked, self.links, len(self), len(self), upgrade=True)

    def needs_rebuild(self) -> bool:
        return self._dead_count > self.settings.rebuild_dead * self.index.ntotal

    @classmethod
    def mapped_from(cls, path: str, settings: AnnSettings, ef: int, near_ef: int, calibrated: int = 0,
                    dead: np.ndarray | None = None, linked: int | None = None, one_ef: int | None = None
                    ) -> HnswShard:
        """A saved graph, memory-mapped: its codes and links stay in the file's pages (clean page cache
        the kernel may drop), not in the process's own memory, and opening reads nothing of it.
        ``calibrated``, ``linked``, ``one_ef``: as saved (0, None when saved before they were kept)."""
        shard = cls(faiss.read_index(path, faiss.IO_FLAG_MMAP_IFC), settings, ef, near_ef, dead=dead, mapped=True,
                    calibrated=calibrated, linked=linked, one_ef=one_ef)
        shard._source = (path, _identity(path))
        return shard

    def _owned(self) -> faiss.IndexIDMap:
        """An owned copy of this mapped graph, to grow. Read again from its file while that is still the
        file it was mapped from: one copy in memory. Else copied through ``serialize_index``, which holds
        the graph twice while it copies (a resumed 1M build would need ~2 x 9 GB at once)."""
        if self._source is not None:
            path, mapped = self._source
            try:
                if _identity(path) == mapped and (owned := faiss.read_index(path)).ntotal == self.index.ntotal:
                    return owned
            except (OSError, RuntimeError):  # gone or replaced since (a fold in another process): copy
                pass
        return faiss.deserialize_index(faiss.serialize_index(self.index))

    def add(self, labels: np.ndarray, vectors: np.ndarray) -> None:
        labels = np.asarray(labels, dtype=np.int64)
        if not len(labels):
            return
        if self.mapped:  # faiss cannot grow a mapped graph (it aborts the process): an owned copy first
            self.index = self._owned()
            self.mapped = False
        top = int(labels.max()) + 1
        self._held.extend_to(top)
        self._dead.extend_to(top)
        back = self._held[labels] & self._dead[labels]  # removed before: it is still in the graph
        if back.any():
            self._dead[labels[back]] = False
            self._dead_count -= int(back.sum())
            self._selector = None
        fresh = ~self._held[labels]
        _, first = np.unique(labels, return_index=True)
        once = np.zeros(len(labels), dtype=bool)
        once[first] = True
        fresh &= once
        if fresh.any():
            grown = int(self.index.ntotal) + int(fresh.sum())  # a graph grown large links its new rows wider
            width = self.settings.build_width(grown)
            faiss.downcast_index(self.index.index).hnsw.efConstruction = width
            self.linked = min(self.linked, width)
            self.saved_as = None
            with _team(int(fresh.sum())):
                self.index.add_with_ids(np.ascontiguousarray(vectors[fresh], dtype=np.float32), labels[fresh])
            self._held[labels[fresh]] = True

    def remove(self, labels: np.ndarray) -> None:
        labels = np.asarray(labels, dtype=np.int64)
        labels = labels[labels < len(self._held)]
        going = np.unique(labels[self._held[labels] & ~self._dead[labels]])
        if len(going):
            self._dead[going] = True
            self._dead_count += len(going)
            self._selector = None

    def _live(self) -> faiss.IDSelector | None:
        if not self._dead_count:
            return None
        if self._selector is None:
            bits = np.packbits(self._dead.values, bitorder="little")
            dead = faiss.IDSelectorBitmap(len(self._dead), faiss.swig_ptr(bits))
            self._selector = (faiss.IDSelectorNot(dead), dead, bits)  # faiss keeps pointers: keep them alive
        return self._selector[0]

    def search(self, queries: np.ndarray, k: int, gather: Gather, ef: int | None = None,
               near: bool = False) -> list[tuple[np.ndarray, np.ndarray]]:
        shortlist = min(len(self), self._shortlist(k))
        if shortlist <= 0:
            return [(np.zeros(0, np.float32), np.zeros(0, np.int64)) for _ in queries]
        params = faiss.SearchParametersHNSW()
        params.efSearch = int(max(shortlist, ef or (self.near_ef if near else self.one_ef if k == 1 else self.ef)))
        selector = self._live()
        if selector is not None:
            params.sel = selector
        with _team(len(queries)):
            _, found = self.index.search(np.ascontiguousarray(queries, dtype=np.float32), shortlist, params=params)
        out = []
        for j, row in enumerate(found):
            labels = row[row >= 0]
            exact = gather(labels) @ queries[j] if len(labels) else np.zeros(0, np.float32)
            out.append(top_k(exact.astype(np.float32), labels, k))
        return out

    def top_and_lowest(self, query: np.ndarray, k: int, gather: Gather) -> tuple[np.ndarray, np.ndarray, float]:
        """The k best of one query, and the lowest score held (the best for ``-query``)."""
        (scores, labels), = self.search(query[None, :], k, gather)
        # The floor only scales scores (min-max): a short walk finds it within ~0.01 (measured on 2Wiki's
        # 65k facts: mean gap 0.008 at ef 40, 0.2 ms, against 0.001 at the calibrated ef, 0.6 ms).
        (worst, _), = self.search(-query[None, :], 1, gather, ef=self.settings.min_rerank)
        return scores, labels, -float(worst[0]) if len(worst) else np.inf
