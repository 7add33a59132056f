"""A shard past ``graph_rows`` held as several HNSW graphs (``hippo.memory.segments``): searched whole,
forgotten and restored per graph, saved and opened as it was, and split from one older graph by relink."""

import faiss
import numpy as np
import pytest

from benchmarks.synthetic import SyntheticCorpus, SyntheticEmbedder, SyntheticExtractor
from hippo import Memory, Settings
from hippo.memory.ann import AnnSettings
from hippo.memory.relink import relink
from hippo.memory.segments import SegmentedShard
from hippo.memory.shards import HnswShard
from hippo.memory.vectors import VectorIndex
from hippo.store import SQLiteStore

DIM = 48
ROWS = 1_500  # a graph's rows at most


def _clustered(rng: np.random.Generator, rows: int, centres: int = 60) -> np.ndarray:
    centre = rng.standard_normal((centres, DIM)).astype(np.float32)
    x = centre[rng.integers(centres, size=rows)] + 0.6 * rng.standard_normal((rows, DIM)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _recall(index: VectorIndex, vectors: np.ndarray, live: np.ndarray, rng: np.random.Generator) -> float:
    queries = vectors[rng.choice(live, 100, replace=False)] + 0.2 * rng.standard_normal((100, DIM)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    found = index.search(queries, 10, [0])
    exact = [live[np.argsort(-(vectors[live] @ q), kind="stable")[:10]] for q in queries]
    return float(np.mean([len(set(f[1].tolist()) & set(e.tolist())) / 10 for f, e in zip(found, exact, strict=True)]))


def _index(rng: np.random.Generator, rows: int, batch: int) -> tuple[VectorIndex, np.ndarray]:
    """A space's ``rows`` vectors written ``batch`` at a time."""
    vectors = _clustered(rng, rows)
    index = VectorIndex(DIM, AnnSettings(exact_max=500, graph_rows=ROWS))
    labels = np.arange(rows)
    index.add(labels, labels.astype(np.uint64), vectors)
    for start in range(0, rows, batch):
        index.include(0, labels[start : start + batch])
    return index, vectors


@pytest.fixture()
def grown():
    """5,000 vectors written 400 at a time: the graph fills, then the next one starts."""
    rng = np.random.default_rng(11)
    return (*_index(rng, 5_000, 400), rng)


def test_a_shard_grown_past_graph_rows_fills_graphs_one_after_another_and_finds_its_top_10(grown):
    index, vectors, rng = grown
    shard = index.shards[0]
    assert isinstance(shard, SegmentedShard)
    assert [graph.index.ntotal for graph in shard.graphs] == [1_500, 1_500, 1_500, 500]  # a write fills the last
    held = np.concatenate([graph.labels() for graph in shard.graphs])
    assert sorted(held.tolist()) == list(range(5_000))  # each record in one graph
    # the last graph's codes are ranged over the 4,800 rows the shard held when it started with 300 of them
    codes = faiss.downcast_index(faiss.downcast_index(shard.graphs[-1].index.index).storage).sq
    assert np.allclose(faiss.vector_to_array(codes.trained)[:DIM], vectors[:4_800].min(axis=0))
    assert all(graph.links == 16 and graph.calibrated > 0 for graph in shard.graphs)
    assert _recall(index, vectors, np.arange(5_000), rng) >= 0.98
    (scores, labels), = index.search(vectors[4_321][None, :], 1, [0])
    assert labels.tolist() == [4_321] and scores[0] == pytest.approx(1.0, abs=1e-3)


def test_one_large_write_is_split_into_graphs_of_about_equal_rows():
    rng = np.random.default_rng(3)
    index, vectors = _index(rng, 4_000, 4_000)
    shard = index.shards[0]
    assert isinstance(shard, SegmentedShard)
    assert [graph.index.ntotal for graph in shard.graphs] == [1_334, 1_333, 1_333]
    assert _recall(index, vectors, np.arange(4_000), rng) >= 0.98


def test_a_forgotten_record_leaves_its_graph_and_comes_back_to_it(grown):
    index, vectors, rng = grown
    shard = index.shards[0]
    first, second, *rest = shard.graphs
    going = first.labels()[:50]
    index.exclude(0, going)
    (_, labels), = index.search(vectors[going[0]][None, :], 10, [0])
    assert going[0] not in labels.tolist() and len(labels) == 10
    index.include(0, going)  # restored: back into the graph that held it, not added again
    assert first.index.ntotal == len(first) and sum(g.index.ntotal for g in shard.graphs) == 5_000
    (_, labels), = index.search(vectors[going[0]][None, :], 1, [0])
    assert labels.tolist() == [going[0]]
    # a quarter of one graph gone: that graph is built again of its live rows, the others stay as they are
    index.exclude(0, second.labels()[: second.index.ntotal // 4 + 1])
    assert shard.graphs[0] is first and shard.graphs[2:] == rest and shard.graphs[1] is not second
    assert shard.graphs[1].index.ntotal == len(shard.graphs[1]) == len(second)
    live = np.concatenate([graph.labels() for graph in shard.graphs])
    assert _recall(index, vectors, live, rng) >= 0.98


def test_a_shard_whose_every_record_is_forgotten_holds_no_graph_and_grows_again(grown):
    index, vectors, _ = grown
    index.exclude(0, np.arange(5_000))
    assert index.shards[0].graphs == [] and index.search(vectors[:2], 10, [0])[0][1].tolist() == []
    assert index.top_and_lowest(vectors[0], 10, [0])[1].tolist() == []
    index.include(0, np.arange(100, 2_000))  # restored: graphs built again of the vectors kept by slot
    assert [graph.index.ntotal for graph in index.shards[0].graphs] == [1_500, 400]
    (_, labels), = index.search(vectors[1_234][None, :], 1, [0])
    assert labels.tolist() == [1_234]


CORPUS = SyntheticCorpus(300)
QUESTIONS = [CORPUS.query(i) for i in (5, 77, 160, 299)]


def _open(path, **settings) -> Memory:
    return Memory(SQLiteStore(path), settings=Settings(ppr_solver="exact", vector_exact_max=60, **settings),
                  embedder=SyntheticEmbedder(), extractor=SyntheticExtractor())


def _answers(memory: Memory) -> list:
    return [[(h.id, round(h.score, 6)) for h in memory.recall(q, k=10).hits] for q in QUESTIONS]


def _segmented(memory: Memory) -> dict:
    return {(kind, code): [graph.index.ntotal for graph in shard.graphs]
            for kind, index in memory.engine.state.vector_indexes() for code, shard in index.shards.items()
            if isinstance(shard, SegmentedShard)}


def test_a_state_of_several_graphs_is_saved_and_opened_as_it_was(tmp_path):
    memory = _open(tmp_path / "s.db", vector_graph_rows=256)
    memory.index(CORPUS.documents(0, 150))
    memory.index(CORPUS.documents(150, 300))
    segmented, answers = _segmented(memory), _answers(memory)
    assert ("fact", 0) in segmented and len(segmented["fact", 0]) >= 3
    memory.close()
    names = {p.name for p in (tmp_path / "s.db.hippo").glob("gen-*/shard-fact-0*.faiss")}
    assert names >= {"shard-fact-0.faiss", "shard-fact-0.1.faiss", "shard-fact-0.2.faiss"}
    reopened = _open(tmp_path / "s.db", vector_graph_rows=256)
    assert reopened.engine.cache.outcome == "loaded"
    assert _segmented(reopened) == segmented and _answers(reopened) == answers
    reopened.index(CORPUS.documents(0, 10))  # nothing new: the same documents again
    reopened.close()


def test_relink_splits_one_older_graph_past_graph_rows(tmp_path):
    memory = _open(tmp_path / "o.db")  # one graph a shard, as before graphs were capped
    memory.index(CORPUS.documents(0, 300))
    facts = len(memory.engine.state.facts.shards[0])
    assert isinstance(memory.engine.state.facts.shards[0], HnswShard) and facts > 512
    answers = [[h.id for h in memory.recall(q, k=5).hits] for q in QUESTIONS]
    memory.close()
    capped = _open(tmp_path / "o.db", vector_graph_rows=256)
    assert ("fact", 0) in {(k, c) for k, index in capped.engine.state.vector_indexes() for c in index.relinkable()}
    result = relink(capped.engine)
    split = {(g.kind, g.shard): g.graphs for g in result.graphs}
    assert split["fact", 0] == -(-facts // 256) and result.saved
    assert [[h.id for h in capped.recall(q, k=5).hits] for q in QUESTIONS] == answers
    capped.close()
    again = _open(tmp_path / "o.db", vector_graph_rows=256)
    assert sum(_segmented(again)["fact", 0]) == facts
    assert not any(index.relinkable() for _, index in again.engine.state.vector_indexes())
    again.close()
