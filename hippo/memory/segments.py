"""A shard too large for one HNSW graph: several graphs of at most ``AnnSettings.graph_rows`` rows each.

One graph's recall at a given walk width falls as it grows, and past some millions of rows no width
wins it back: in the 1M-passage store at 675,840 passages, one 32-link graph of 6.76M synthetic fact
vectors found 0.971 of the questions' exact top 10 at ef 972 (``results/scale-stop61-partial1m.md``),
where a graph of 1M of the same kind of vectors found 0.988 at ef 432
(``results/ann_codes-links-stop60.md``). As Lucene keeps one graph per segment, a shard past
``graph_rows`` fills graphs one after another: a search walks each at its own calibrated width and
merges their best, so a record in any graph is found as surely as in a graph of that size. A write
links its new rows into the last graph only (no insertion walks a graph past ``graph_rows`` rows);
a removed record is skipped, and a quarter dead rebuilt, per graph.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from hippo.memory.ann import AnnSettings, Gather
from hippo.memory.shards import HnswShard

Results = list[tuple[np.ndarray, np.ndarray]]  # per query: (scores, labels), best first


def merged(parts: list[Results], k: int) -> Results:
    """Per query, the ``k`` best of several searches' results (a label found twice counted once: an
    entity may be in several spaces' shards); ties by label."""
    if len(parts) == 1:
        return parts[0]
    out = []
    for j in range(len(parts[0])):
        scores = np.concatenate([part[j][0] for part in parts])
        labels, first = np.unique(np.concatenate([part[j][1] for part in parts]), return_index=True)
        scores = scores[first]
        order = np.lexsort((labels, -scores))[:k]
        out.append((scores[order], labels[order]))
    return out


def graph_of(labels: np.ndarray, gather: Gather, settings: AnnSettings) -> HnswShard | SegmentedShard:
    """One graph of these labels, or as many of at most ``graph_rows`` rows as they need."""
    labels = np.asarray(labels, dtype=np.int64)
    if len(labels) <= settings.graph_rows:
        return HnswShard.built(labels, gather, settings)
    return SegmentedShard.built(labels, gather, settings)


class SegmentedShard:
    kind = "hnsw"

    def __init__(self, graphs: list[HnswShard], settings: AnnSettings) -> None:
        self.graphs = graphs
        self.settings = settings

    @classmethod
    def built(cls, labels: np.ndarray, gather: Gather, settings: AnnSettings) -> SegmentedShard:
        """Graphs of about equal rows, as few as ``graph_rows`` allows (a graph of a few rows left over
        would be calibrated and walked like the others for nothing)."""
        labels = np.asarray(labels, dtype=np.int64)
        parts = np.array_split(labels, -(-len(labels) // settings.graph_rows))
        return cls([cls._graph(part, gather, settings, labels) for part in parts], settings)

    @staticmethod
    def _graph(labels: np.ndarray, gather: Gather, settings: AnnSettings, shard: np.ndarray) -> HnswShard:
        """A graph linked as one of ``graph_rows`` (what it grows to: never built again as it crosses
        ``wide_build_from``), its codes' ranges drawn from the whole ``shard`` (a graph started by one
        write's few rows would otherwise quantize every later row to their ranges)."""
        return HnswShard.built(labels, gather, settings, rows=max(settings.graph_rows, len(labels)), trained_on=shard)

    def __len__(self) -> int:
        return sum(len(graph) for graph in self.graphs)

    def labels(self) -> np.ndarray:
        return np.concatenate([graph.labels() for graph in self.graphs]) if self.graphs else np.zeros(0, np.int64)

    def dead_labels(self) -> np.ndarray:
        return np.concatenate([graph.dead_labels() for graph in self.graphs]) if self.graphs else np.zeros(0, np.int64)

    @property
    def links(self) -> int:
        return min(graph.links for graph in self.graphs)

    # What a calibrated graph reports (``benchmarks/scale.py``): the widest of its graphs.
    ef = property(lambda self: max(graph.ef for graph in self.graphs))
    one_ef = property(lambda self: max(graph.one_ef for graph in self.graphs))
    near_ef = property(lambda self: max(graph.near_ef for graph in self.graphs))

    def relinkable(self) -> bool:
        return any(graph.relinkable() for graph in self.graphs)

    def needs_calibration(self) -> bool:
        return any(graph.needs_calibration() for graph in self.graphs)

    def recalibrated(self, gather: Gather) -> SegmentedShard:
        for graph in self.graphs:
            if graph.needs_calibration():
                graph.recalibrated(gather)
        return self

    def needs_rebuild(self) -> bool:
        return any(graph.needs_rebuild() for graph in self.graphs)

    def rebuilt(self, gather: Gather) -> SegmentedShard:
        """Each graph a quarter dead built again of its live rows (dropped when none is left)."""
        kept = []
        for graph in self.graphs:
            if graph.needs_rebuild():
                live = graph.labels()
                if not len(live):
                    continue
                graph = self._graph(live, gather, self.settings, self.labels())
            kept.append(graph)
        self.graphs = kept
        return self

    def add(self, labels: np.ndarray, vectors: np.ndarray, gather: Gather) -> None:
        """A record held before (removed, now restored) goes back into its graph; new ones fill the last
        graph to ``graph_rows``, then new ones."""
        labels = np.asarray(labels, dtype=np.int64)
        vectors = np.asarray(vectors, dtype=np.float32)
        fresh = np.ones(len(labels), dtype=bool)
        for graph in self.graphs:
            held = fresh & graph.holds(labels)
            if held.any():
                graph.add(labels[held], vectors[held])
                fresh &= ~held
        if not fresh.any():
            return
        _, first = np.unique(labels[fresh], return_index=True)
        labels, vectors = labels[fresh][np.sort(first)], vectors[fresh][np.sort(first)]
        room = max(self.settings.graph_rows - self.graphs[-1].index.ntotal, 0) if self.graphs else 0
        if room:
            self.graphs[-1].add(labels[:room], vectors[:room])
        rest, rows = labels[room:], self.settings.graph_rows
        shard = np.concatenate([self.labels(), rest]) if len(rest) else rest
        for start in range(0, len(rest), rows):
            self.graphs.append(self._graph(rest[start : start + rows], gather, self.settings, shard))

    def remove(self, labels: np.ndarray) -> None:
        for graph in self.graphs:
            graph.remove(labels)

    def search(self, queries: np.ndarray, k: int, gather: Gather, ef: int | None = None,
               near: bool = False) -> Results:
        if not self.graphs:
            return [(np.zeros(0, np.float32), np.zeros(0, np.int64)) for _ in queries]
        return merged([graph.search(queries, k, gather, ef=ef, near=near) for graph in self.graphs], k)

    def top_and_lowest(self, query: np.ndarray, k: int, gather: Gather) -> tuple[np.ndarray, np.ndarray, float]:
        if not self.graphs:
            return np.zeros(0, np.float32), np.zeros(0, np.int64), np.inf
        found = [graph.top_and_lowest(query, k, gather) for graph in self.graphs]
        (scores, labels), = merged([[(part[0], part[1])] for part in found], k)
        return scores, labels, min(part[2] for part in found)


def graphs_of(code: int, shard: HnswShard | SegmentedShard) -> Iterator[tuple[str, HnswShard]]:
    """A graph shard's graphs by the key each is saved under: the shard's code, then ``code.1``, ``code.2``..."""
    graphs = shard.graphs if isinstance(shard, SegmentedShard) else [shard]
    for number, graph in enumerate(graphs):
        yield (f"{code}.{number}" if number else str(code)), graph


def joined(graphs: dict[str, HnswShard], settings: AnnSettings) -> dict[int, HnswShard | SegmentedShard]:
    """The shards of graphs loaded by their saved keys (``graphs_of``)."""
    parts: dict[int, list[tuple[int, HnswShard]]] = {}
    for key, graph in graphs.items():
        code, _, number = key.partition(".")
        parts.setdefault(int(code), []).append((int(number or 0), graph))
    return {code: found[0][1] if len(found) == 1 else SegmentedShard([g for _, g in sorted(found, key=lambda p: p[0])],
                                                                      settings)
            for code, found in parts.items()}
