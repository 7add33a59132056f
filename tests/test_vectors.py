"""Vector search per space: exact while small, HNSW above; visibility inside the search, never after it."""

import os
from dataclasses import replace
from pathlib import Path

import faiss
import numpy as np
import pytest

from benchmarks.synthetic import SyntheticCorpus, SyntheticEmbedder, SyntheticExtractor
from hippo import Memory, Settings
from hippo.memory.ann import AnnSettings
from hippo.memory.calibration import calibration_queries
from hippo.memory.flat import FlatShard
from hippo.memory.pages import saved_rows
from hippo.memory.shards import HnswShard
from hippo.memory.vectors import VectorIndex, VectorStore
from hippo.store import SQLiteStore

DIM = 48


def _clustered(rng: np.random.Generator, rows: int, centres: int = 60) -> np.ndarray:
    centre = rng.standard_normal((centres, DIM)).astype(np.float32)
    x = centre[rng.integers(centres, size=rows)] + 0.6 * rng.standard_normal((rows, DIM)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _exact(matrix: np.ndarray, labels: np.ndarray, query: np.ndarray, k: int) -> list[int]:
    scores = matrix @ query
    return labels[np.lexsort((labels, -scores))[:k]].tolist()


@pytest.fixture(scope="module")
def big_index():
    rng = np.random.default_rng(5)
    vectors = _clustered(rng, 12_000)
    index = VectorIndex(DIM, AnnSettings(exact_max=2_000))
    labels = np.arange(len(vectors))
    index.add(labels, labels.astype(np.uint64), vectors)
    index.include(0, labels[:10_000])  # the big space
    index.include(1, labels[10_000:10_040])  # a small one
    return index, vectors, rng


def test_a_big_shard_is_hnsw_and_meets_its_recall(big_index):
    index, vectors, rng = big_index
    assert isinstance(index.shards[0], HnswShard) and isinstance(index.shards[1], FlatShard)
    queries = vectors[rng.choice(10_000, 100, replace=False)] + 0.2 * rng.standard_normal((100, DIM)).astype(
        np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    found = index.search(queries, 10, [0])
    labels = np.arange(10_000)
    recall = np.mean([len(set(f[1].tolist()) & set(_exact(vectors[:10_000], labels, q, 10))) / 10
                      for f, q in zip(found, queries, strict=True)])
    assert recall >= 0.98


def test_a_search_for_many_re_scores_a_narrower_multiple_of_k_and_keeps_its_top(big_index):
    """A search for 10 re-scores 40 + 4 x 10 candidates exactly; one for more than ``many`` (the passage
    prior's 200) only 40 + ``rerank_many`` x k: its top k stays near exact and its top 10 exact."""
    index, vectors, rng = big_index
    shard = index.shards[0]
    gathered: list[int] = []

    def gather(labels: np.ndarray) -> np.ndarray:
        gathered.append(len(labels))
        return index.vectors_of(labels)

    queries = vectors[rng.choice(10_000, 40, replace=False)] + 0.2 * rng.standard_normal((40, DIM)).astype(
        np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    labels = np.arange(10_000)
    for k, width in ((1, 44), (10, 80), (50, 240), (200, 440)):
        gathered.clear()
        found = shard.search(queries, k, gather)
        assert max(gathered) == width  # the margin (40) + rerank (4) x k up to ``many`` (50), then 2 x k
        exact = [_exact(vectors[:10_000], labels, q, k) for q in queries]
        top = np.mean([len(set(f[1].tolist()) & set(e)) / k for f, e in zip(found, exact, strict=True)])
        ten = np.mean([len(set(f[1][:10].tolist()) & set(e[:10])) / min(k, 10)
                       for f, e in zip(found, exact, strict=True)])
        assert top >= 0.95 and ten >= 0.98, (k, top, ten)


def test_a_small_space_in_a_huge_index_gets_its_true_top_k(big_index):
    index, vectors, rng = big_index
    small = np.arange(10_000, 10_040)
    query = vectors[5]  # close to the big space, far from the small one
    (scores, labels), = index.search(query, 10, [1])
    assert labels.tolist() == _exact(vectors[small], small, query, 10)
    assert np.allclose(scores, vectors[labels] @ query, atol=1e-6)
    (_, both), = index.search(query, 10, [0, 1])
    assert set(both.tolist()) <= set(range(10_040)) and 5 in both.tolist()
    index.exclude(1, labels[:3])  # forgotten: gone from the space's results, the rest still exact
    (_, after), = index.search(query, 10, [1])
    rest = np.setdiff1d(small, labels[:3])
    assert after.tolist() == _exact(vectors[rest], rest, query, 10)
    index.include(1, labels[:3])
    assert index.search(query, 10, [1])[0][1].tolist() == labels.tolist()


def test_graph_adds_go_in_at_once_and_removals_rebuild_only_past_a_quarter(big_index):
    index, vectors, rng = big_index
    shard = index.shards[0]
    fresh = _clustered(rng, 500)
    labels = np.arange(20_000, 20_500)
    index.add(labels, labels.astype(np.uint64), fresh)
    index.include(0, labels)
    assert index.shards[0] is shard and len(shard) == 10_500
    (_, found), = index.search(fresh[7], 1, [0])
    assert found.tolist() == [20_007]  # an added vector is found at once
    index.exclude(0, labels)  # removed: skipped inside the search, still true top k of the rest
    (_, found), = index.search(fresh[7], 10, [0])
    assert index.shards[0] is shard and not set(found.tolist()) & set(labels.tolist()) and len(found) == 10
    index.exclude(0, np.arange(3_000))  # past a quarter removed: the graph is rebuilt without them
    rebuilt = index.shards[0]
    assert rebuilt is not shard and len(rebuilt) == 7_000 and rebuilt.index.ntotal == 7_000
    index.include(0, np.arange(3_000))  # restored: back in
    assert len(index.shards[0]) == 10_000


def test_engine_search_stays_inside_the_readers_spaces(tmp_path):
    """Through the engine: a small user space beside a big org space (an HNSW graph) reads its
    own exact top k, for dense retrieval and recall alike."""
    corpus = SyntheticCorpus(300)
    embedder = SyntheticEmbedder()
    memory = Memory(SQLiteStore(tmp_path / "s.db"), settings=Settings(vector_exact_max=100), embedder=embedder,
                    extractor=SyntheticExtractor())
    memory.index(corpus.documents(0, 290))
    memory.index(corpus.documents(290, 300), space="user:ann")
    state = memory.engine.state  # the engine's own indexes
    assert isinstance(state.passages.shards[state.projection.code_of("org")], HnswShard)
    query = corpus.query(3)  # about an org passage
    hits = memory.retrieve(query, k=5, mode="dense", spaces=["user:ann"])
    q = embedder.encode([query])[0]
    vertices = [v for v in range(state.projection.vertex_count)
                if state.projection.is_passage[v] and state.projection.space_of(v) == "user:ann"]
    exact = sorted(vertices, key=lambda v: (-float(state.passages.vectors_of(np.array([v]))[0] @ q), v))[:5]
    assert [h.id for h in hits] == [state.projection.record_ids[v] for v in exact]
    recalled = memory.recall(query, spaces=["user:ann"])
    assert recalled.hits and all(h.space == "user:ann" for h in recalled.hits)
    memory.close()


def test_a_graph_grown_by_adds_is_calibrated_again_each_time_it_grows_by_half():
    """``ef`` fitted to a small graph under-searches the same graph grown large (a facts graph
    calibrated at 20k rows found 0.89 of the true top 10 at 3M): it is fitted again each time it
    holds ``recalibrate_growth`` (1.5) times the rows of the last fit."""
    rng = np.random.default_rng(8)
    vectors = _clustered(rng, 9_000, centres=12)
    index = VectorIndex(DIM, AnnSettings(exact_max=500, min_ef=16, build_ef=16))
    labels = np.arange(len(vectors))
    index.add(labels, labels.astype(np.uint64), vectors)
    index.include(0, labels[:600])  # past exact_max: a graph, calibrated at 600 rows
    shard = index.shards[0]
    assert isinstance(shard, HnswShard) and shard.calibrated == 600
    calibrations = [(shard.calibrated, shard.ef)]
    for start in range(600, 9_000, 300):
        index.include(0, labels[start : start + 300])
        if shard.calibrated != calibrations[-1][0]:
            calibrations.append((shard.calibrated, shard.ef))
    assert [rows for rows, _ in calibrations] == [600, 900, 1_500, 2_400, 3_600, 5_400, 8_100]
    assert calibrations[-1][1] > calibrations[0][1]  # the grown graph needs a wider walk
    queries = _clustered(rng, 60, centres=12)

    def recall() -> float:
        found = index.search(queries, 10, [0])
        return float(np.mean([len(set(got.tolist()) & set(_exact(vectors, labels, q, 10))) / 10
                              for (_, got), q in zip(found, queries, strict=True)]))

    now = recall()
    shard.ef = calibrations[0][1]
    assert now > recall() + 0.2  # measured: 0.92 against 0.49 with the walk fitted at 600 rows


def test_calibration_queries_are_noisy_copies_and_blends_of_two_held_vectors():
    """Parts of ``calibration`` unit queries: copies of held vectors at cosine ~0.55, blends of two held
    vectors about ``blend_cosine`` apart (so a blend is as close to each of its two, ~0.81), near copies at
    ~0.8; without blends (entities: a question's phrases search them) the middle part is not made."""
    rng = np.random.default_rng(12)
    vectors = _clustered(rng, 6_000, centres=30)
    settings = AnnSettings()
    parts = calibration_queries(np.arange(len(vectors)), vectors.__getitem__, settings, np.random.default_rng(1))
    assert [part.shape for part in parts] == [(settings.calibration, DIM)] * 3
    far, blends, near = (-np.sort(-(part @ vectors.T), axis=1)[:, :2] for part in parts)
    assert all(np.allclose(np.linalg.norm(part, axis=1), 1, atol=1e-5) for part in parts)
    held_cosine = np.sqrt((1 + settings.blend_cosine) / 2)
    assert abs(np.median(blends[:, 0]) - held_cosine) < 0.03 and abs(np.median(blends[:, 1]) - held_cosine) < 0.03
    assert 0.45 < np.median(far[:, 0]) < 0.7
    assert 0.72 < np.median(near[:, 0]) < 0.88
    plain = calibration_queries(np.arange(len(vectors)), vectors.__getitem__, AnnSettings(blends=False),
                                 np.random.default_rng(1))
    assert len(plain) == 2 and np.array_equal(plain[0], parts[0])


def test_ef_walks_as_wide_as_the_harder_of_its_two_kinds_of_far_query():
    """The far ``ef`` is the smallest that meets ``recall`` on the noisy copies and on the blends: where
    one kind needs a wider walk, that is the walk, whichever part of the queries it is in."""
    rng = np.random.default_rng(13)
    vectors = _clustered(rng, 8_000)
    labels = np.arange(len(vectors))
    gather = vectors.__getitem__
    shard = HnswShard.built(labels, gather, AnnSettings(links=8, build_ef=16, min_ef=16))
    held = vectors[rng.choice(len(vectors), 100, replace=False)]
    apart = held + vectors[rng.choice(len(vectors), 100, replace=False)]  # two unrelated vectors: hard
    parts = {"easy": held, "hard": apart / np.linalg.norm(apart, axis=1, keepdims=True)}
    best = {name: -np.sort(-(q @ vectors.T), axis=1)[:, :10] for name, q in parts.items()}
    alone = {name: shard._calibrate(q, best[name], gather, 16) for name, q in parts.items()}
    assert alone["hard"] > alone["easy"]
    for first, second in (("easy", "hard"), ("hard", "easy")):
        order = (first, second, "easy")
        shard._calibrated_on([parts[n] for n in order], np.concatenate([best[n] for n in order]), gather)
        assert shard.ef == alone["hard"]
    shard._calibrated_on([parts["easy"], parts["easy"]], np.concatenate([best["easy"]] * 2), gather)
    assert shard.ef == alone["easy"]  # without blends, what the noisy part needs


def test_a_search_for_the_best_one_walks_as_wide_as_finding_one_needs():
    """A search for one (an entity link) walks at ``one_ef``: calibrated for the best one alone, so
    narrower than the top-10 walk where the top 10 is the harder thing to find, never below
    ``min_ef`` nor above ``ef``, and it still finds the exact best."""
    import faiss

    rng = np.random.default_rng(13)
    vectors = _clustered(rng, 8_000)
    labels = np.arange(len(vectors))
    gather = vectors.__getitem__
    shard = HnswShard.built(labels, gather, AnnSettings(min_ef=16))
    assert 16 <= shard.one_ef < shard.ef
    phrases = vectors[rng.choice(len(vectors), 200, replace=False)]
    phrases = phrases + 1.5 / np.sqrt(DIM) * rng.standard_normal(phrases.shape).astype(np.float32)
    phrases /= np.linalg.norm(phrases, axis=1, keepdims=True)
    best = (phrases @ vectors.T).max(axis=1)

    def searched(k: int, ef: int | None = None) -> tuple[list, int]:
        faiss.cvar.hnsw_stats.reset()
        found = shard.search(phrases, k, gather, ef=ef)
        return found, faiss.cvar.hnsw_stats.ndis  # distances computed: how wide the walk went

    one, walked = searched(1)
    assert walked == searched(1, shard.one_ef)[1] < searched(1, shard.ef)[1]
    assert np.mean([scores[0] >= b - 1e-6 for (scores, _), b in zip(one, best, strict=True)]) >= 0.98
    assert searched(2)[1] == searched(2, shard.ef)[1]  # any other k: the top-10 width


def test_when_a_graph_is_built_again_whole_is_one_rule_of_width_links_and_size():
    """``AnnSettings.rebuilds`` (the defaults: built at 200 at every size, 16 links below 500k rows, 32 from
    there): growing across 500k rebuilds a 16-link graph, growing below or past it does not, nor does a
    graph that crossed with 32; rows linked narrower than the size's width always do; ``upgrade`` (a
    relink) rebuilds an older hippo's 16-link graph past 500k without growth."""
    s = AnnSettings()
    assert (s.links_for(499_999), s.links_for(500_000), s.build_width(10), s.build_width(10**7)) == (16, 32, 200, 200)
    assert s.rebuilds(200, 16, 499_000, 501_000)
    assert not s.rebuilds(200, 16, 100_000, 499_999)
    assert not s.rebuilds(200, 16, 600_000, 900_000)  # an older hippo's large graph grows as it is
    assert s.rebuilds(200, 16, 600_000, 600_000, upgrade=True)
    assert not s.rebuilds(200, 32, 499_000, 501_000) and not s.rebuilds(200, 32, 600_000, 600_000, upgrade=True)
    assert s.rebuilds(100, 32, 600_000, 600_001)  # rows linked at 100 in a graph built at 200
    assert not s.rebuilds(200, 16, 1_000, 1_000, upgrade=True)  # small graphs keep 16 links


def test_a_large_graph_is_built_wider_and_a_graph_grown_large_links_its_new_rows_wider():
    """efConstruction is ``build_ef`` below ``wide_build_from`` rows and ``wide_build_ef`` from there, for a
    graph built whole and for the rows added once a graph has grown past it."""
    import faiss

    rng = np.random.default_rng(14)
    vectors = _clustered(rng, 1_400)
    gather = vectors.__getitem__
    settings = AnnSettings(min_ef=16, build_ef=16, wide_build_ef=48, wide_build_from=1_000)

    def width(shard: HnswShard) -> int:
        return faiss.downcast_index(shard.index.index).hnsw.efConstruction

    small = HnswShard.built(np.arange(800), gather, settings)
    assert width(small) == 16
    small.add(np.arange(800, 900), vectors[800:900])
    assert width(small) == 16  # 900 rows
    small.add(np.arange(900, 1_100), vectors[900:1_100])
    assert width(small) == 48  # 1,100 rows: the new ones were linked at 48
    assert width(HnswShard.built(np.arange(1_200), gather, settings)) == 48


def _unshared_index(seed: int, rows: int, **ann: int) -> tuple[VectorIndex, np.ndarray, np.ndarray]:
    """An index holding ``rows`` clustered vectors in no shard yet, its graphs small (``exact_max`` 300,
    ``wide_build_from`` 1,000, built at 16 unless ``ann`` says otherwise); the vectors and their labels."""
    vectors = _clustered(np.random.default_rng(seed), rows)
    labels = np.arange(len(vectors))
    index = VectorIndex(DIM, AnnSettings(**{"exact_max": 300, "min_ef": 16, "build_ef": 16, "wide_build_from": 1_000,
                                            **ann}))
    index.add(labels, labels.astype(np.uint64), vectors)
    return index, vectors, labels


def test_an_index_whose_graph_grows_past_wide_build_from_links_it_again_whole():
    """Rows linked narrow before a graph grew large stay narrow (a 1M-fact graph grown so walked at
    ``ef`` 972 where one built whole at 200 walks at 288): the index builds it again, once, at the
    wide width, with every row it held and the new ones, and adds to it as usual afterwards."""
    import faiss

    index, vectors, labels = _unshared_index(15, 1_600, wide_build_ef=48)
    index.include(0, labels[:400])
    index.exclude(0, labels[:10])  # removed rows stay out of the graph built again
    narrow = index.shards[0]
    index.include(0, labels[400:900])
    assert index.shards[0] is narrow and faiss.downcast_index(narrow.index.index).hnsw.efConstruction == 16
    index.include(0, labels[900:1_100])  # 1,090 live rows: past 1,000
    wide = index.shards[0]
    assert wide is not narrow and faiss.downcast_index(wide.index.index).hnsw.efConstruction == 48
    assert (narrow.links, wide.links) == (16, 32)  # ``links`` below ``wide_build_from``, ``wide_links`` past it
    assert sorted(wide.labels().tolist()) == list(range(10, 1_100)) and wide.calibrated == 1_090
    index.include(0, labels[1_100:1_200])
    assert index.shards[0] is wide and len(wide) == 1_190  # grown as usual from there
    (_, found), = index.search(vectors[1_150][None, :], 1, [0])
    assert found.tolist() == [1_150]


@pytest.mark.parametrize("saved", ["grown", "whole", "grown, saved before linked was kept",
                                   "whole, saved before linked was kept"])
def test_a_saved_graph_keeps_the_narrowest_width_its_rows_were_linked_at(tmp_path, saved):
    """A graph's own efConstruction says only the width it last linked at, so the narrowest is kept
    beside it: a graph grown past ``wide_build_from`` and saved is built again whole on its next write
    (the 100k store's grown 1M-fact graph was not: its field read 200), one built whole at the wide
    width is not, and a large graph saved before the width was kept is taken as grown."""
    import faiss

    settings = AnnSettings(exact_max=300, min_ef=16, build_ef=16, wide_build_ef=48, wide_build_from=1_000)
    rng = np.random.default_rng(21)
    vectors = _clustered(rng, 1_200)
    labels = np.arange(len(vectors))
    if saved.startswith("grown"):
        graph = HnswShard.built(labels[:900], vectors.__getitem__, settings)
        graph.add(labels[900:1_100], vectors[900:1_100])  # straight into the graph, as before the rebuild
    else:
        graph = HnswShard.built(labels[:1_100], vectors.__getitem__, settings)
    assert faiss.downcast_index(graph.index.index).hnsw.efConstruction == 48
    assert graph.linked == (16 if saved.startswith("grown") else 48)
    faiss.write_index(graph.index, str(tmp_path / "graph.faiss"))
    index = VectorIndex(DIM, settings)
    index.add(labels, labels.astype(np.uint64), vectors)
    mapped = index.shards[0] = HnswShard.mapped_from(str(tmp_path / "graph.faiss"), settings, graph.ef,
                                                     graph.near_ef, graph.calibrated,
                                                     linked=None if "before" in saved else graph.linked)
    index.include(0, labels[1_100:1_110])
    rebuilt = index.shards[0] is not mapped
    assert rebuilt == (saved != "whole")
    assert len(index.shards[0]) == 1_110 and index.shards[0].linked == 48


def test_a_graph_growing_past_wide_build_from_is_linked_again_with_wide_links_at_one_width():
    """With one build width for every size (the defaults: ``build_ef`` = ``wide_build_ef``), a graph that
    grows past ``wide_build_from`` is still built again whole, for its links: ``links`` below, ``wide_links``
    from there; and grown in place after."""
    index, vectors, labels = _unshared_index(25, 1_300, wide_build_ef=16)
    index.include(0, labels[:900])
    narrow = index.shards[0]
    assert narrow.links == 16
    index.include(0, labels[900:1_100])
    wide = index.shards[0]
    assert wide is not narrow and wide.links == 32 and len(wide) == 1_100
    index.include(0, labels[1_100:1_300])
    assert index.shards[0] is wide and len(wide) == 1_300


def test_a_saved_large_graph_with_fewer_links_grows_as_it_is_until_relinked(tmp_path):
    """A graph built whole past ``wide_build_from`` before large graphs got ``wide_links`` (16 links at
    the wide width, an older hippo's) is not built again by a write (an upgrade must not make one write
    link 10M facts): it grows in place, and ``VectorIndex.relink`` builds it whole with ``wide_links``
    when asked (the scale benchmark's ``--relink``). A graph linked as today's settings link one of its
    size is left as it is by both."""
    import faiss

    rng = np.random.default_rng(24)
    vectors = _clustered(rng, 1_400)
    labels = np.arange(len(vectors))
    settings = AnnSettings(exact_max=300, min_ef=16, build_ef=16, wide_build_ef=48, wide_build_from=1_000)
    for links in (16, 32):
        graph = HnswShard.built(labels[:1_100], vectors.__getitem__, replace(settings, wide_links=links))
        assert graph.links == links and graph.linked == 48
        path = str(tmp_path / f"graph-{links}.faiss")
        faiss.write_index(graph.index, path)
        index = VectorIndex(DIM, settings)
        index.add(labels, labels.astype(np.uint64), vectors)
        mapped = index.shards[0] = HnswShard.mapped_from(path, settings, graph.ef, graph.near_ef, graph.calibrated,
                                                         linked=graph.linked)
        assert mapped.links == links and mapped.relinkable() == (links == 16)  # read from the mapped file
        index.include(1, labels[1_200:1_400])  # 200 rows: flat
        index.include(0, labels[1_100:1_110])
        grown = index.shards[0]
        assert grown is mapped and len(grown) == 1_110 and grown.links == links  # grown in place
        assert index.relink() == ([0] if links == 16 else [])
        assert index.shards[0].links == 32 and sorted(index.shards[0].labels().tolist()) == list(range(1_110))
        assert index.relink() == []
        (_, found), = index.search(vectors[1_105][None, :], 1, [0])
        assert found.tolist() == [1_105]


def test_calibration_stops_where_a_wider_walk_finds_no_more():
    """Where the graph cannot reach ``recall`` at any width, ``ef`` stops at the plateau rather than
    at ``max_ef``, and the walk it stops at finds nearly what the widest one does."""
    rng = np.random.default_rng(9)
    vectors = _clustered(rng, 4_000, centres=12)
    labels = np.arange(len(vectors))
    gather = vectors.__getitem__
    unreachable = {"recall": 1.01, "min_ef": 16}
    stopping = HnswShard.built(labels, gather, AnnSettings(**unreachable))
    walking = HnswShard.built(labels, gather, AnnSettings(**unreachable, plateau=-1.0))
    assert walking.ef == AnnSettings().max_ef
    assert stopping.ef < walking.ef / 2
    queries = _clustered(rng, 100, centres=12)

    def recall(ef: int) -> float:
        found = stopping.search(queries, 10, gather, ef=ef)
        return float(np.mean([len(set(got.tolist()) & set(_exact(vectors, labels, q, 10))) / 10
                              for (_, got), q in zip(found, queries, strict=True)]))

    assert recall(stopping.ef) >= recall(walking.ef) - 0.03


@pytest.mark.parametrize("file", ["as mapped", "replaced", "gone"])
def test_a_mapped_graph_grows_from_one_copy_of_its_file_and_never_from_another_file(tmp_path, monkeypatch, file):
    """Growing a mapped graph needs an owned copy. While its file is the one it was mapped from, the copy
    is read from it (one copy in memory, not ``serialize_index``'s two); a file replaced or removed since
    is never read: the mapped graph is copied instead, and keeps its own rows."""
    rng = np.random.default_rng(12)
    vectors = _clustered(rng, 1_400)
    labels = np.arange(len(vectors))
    settings = AnnSettings(exact_max=100)
    path = tmp_path / "graph.faiss"
    faiss.write_index(HnswShard.built(labels[:1_000], vectors.__getitem__, settings).index, str(path))
    shard = HnswShard.mapped_from(str(path), settings, ef=64, near_ef=32)
    if file == "replaced":  # another graph under the same name (another process folded the state)
        other = HnswShard.built(labels[1_000:1_300], vectors.__getitem__, settings)
        faiss.write_index(other.index, str(tmp_path / "other.faiss"))
        (tmp_path / "other.faiss").replace(path)
    elif file == "gone":
        path.unlink()
    copies = []
    serialize = faiss.serialize_index
    monkeypatch.setattr(faiss, "serialize_index", lambda index: copies.append(1) or serialize(index))
    shard.add(labels[1_300:], vectors[1_300:])
    assert not shard.mapped and copies == ([] if file == "as mapped" else [1])
    held = np.sort(faiss.vector_to_array(shard.index.id_map))
    assert held.tolist() == labels[:1_000].tolist() + labels[1_300:].tolist()
    (_, found), = shard.search(vectors[1_350][None, :], 1, vectors.__getitem__)
    assert found.tolist() == [1_350]


def _rss_file_kb() -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("RssFile:"))


@pytest.mark.skipif(not hasattr(os, "pread"), reason="positional reads are POSIX")
def test_saved_rows_are_read_by_position_without_mapping_the_file(tmp_path):
    """A saved vector file's rows come back as written, in the order asked, out-of-range rows are refused
    by name, and reading scattered rows of a warm file adds nothing to the process's mapped pages (a mapped
    row brought its whole page-cache folio into RSS with it)."""
    rng = np.random.default_rng(9)
    rows = rng.standard_normal((40_000, 384)).astype(np.float16)  # 30 MB
    path = tmp_path / "vectors-fact-float16-1.bin"
    path.write_bytes(rows.tobytes())
    saved = saved_rows(path, "float16", rows.shape)
    asked = rng.choice(len(rows), 2_000, replace=False)
    assert np.array_equal(saved[asked], rows[asked])
    assert np.array_equal(np.asarray(saved), rows) and saved.astype(np.float32).dtype == np.float32
    with pytest.raises(IndexError, match="vectors-fact-float16-1.bin"):
        saved[np.array([len(rows)])]
    with pytest.raises(ValueError, match="fewer than 40001 rows"):
        saved_rows(path, "float16", (40_001, 384))
    assert len(saved_rows(path, "float16", (0, 384))) == 0
    if Path("/proc/self/status").exists():
        before = _rss_file_kb()
        for part in np.array_split(rng.choice(len(rows), 20_000, replace=False), 50):
            saved[part]
        assert _rss_file_kb() - before < 1_024
    store = VectorStore(384, saved)  # the saved part, then rows added in memory
    store.append(rows[:3].astype(np.float32))
    assert np.array_equal(store.get(np.array([len(rows) + 2, 7])), rows[[2, 7]].astype(np.float32))


def test_cosines_of_rows_an_exact_shard_holds_read_no_saved_row(tmp_path, monkeypatch):
    """Labels an exact (flat) shard keeps in memory are scored from it, with the very numbers the
    saved file holds; labels of no flat shard still come from the file; none held scores -inf."""
    from hippo.memory.pages import FileRows

    rng = np.random.default_rng(4)
    vectors = rng.standard_normal((300, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    path = tmp_path / "vectors-passage-float32-1.bin"
    path.write_bytes(vectors.tobytes())
    index = VectorIndex(384)
    index.store = VectorStore(384, saved_rows(path, "float32", vectors.shape))
    labels = np.arange(300, dtype=np.int64) * 3
    index.keys.append(np.zeros(300, dtype=np.uint64))
    index.label_of.append(labels)
    index.slot_of.extend_to(int(labels.max()) + 1, -1)
    index.slot_of[labels] = np.arange(300)
    index.include(0, labels[:200], vectors[:200])  # space 0's shard holds the first 200; the rest no shard
    read = []
    monkeypatch.setattr(FileRows, "__getitem__", lambda self, rows, real=FileRows.__getitem__:
                        read.append(len(rows)) or real(self, rows))
    q = vectors[5]
    asked = np.array([labels[7], labels[250], 1, labels[0]])  # in a shard, in no shard, no vector, in a shard
    got = index.scores(q, asked)
    assert read == [1]  # the one label no flat shard holds
    assert np.array_equal(got[[0, 1, 3]], vectors[[7, 250, 0]] @ q) and got[2] == -np.inf
    read.clear()
    assert np.array_equal(index.scores(q, labels[:200]), vectors[:200] @ q) and read == []
