"""PPR, seed weighting and read-out as pure functions on hand-made graphs."""

import igraph as ig
import numpy as np
import pytest
from scipy import sparse

from hippo.graph import GraphProjection, personalized_pagerank, synonym_edges
from hippo.graph.scoring import fact_seed_weights, fuse_seeds, link_seed_weights, minmax, passage_mass
from hippo.store import GraphData


def _path_graph(n: int) -> ig.Graph:
    graph = ig.Graph(n=n, edges=[(i, i + 1) for i in range(n - 1)], directed=False)
    graph.es["weight"] = [1.0] * (n - 1)
    return graph


def test_ppr_is_a_distribution_that_decays_with_distance_from_the_seed():
    scores = personalized_pagerank(_path_graph(5), np.array([1.0, 0, 0, 0, 0]), damping=0.5)
    assert scores.sum() == pytest.approx(1.0)
    assert list(scores) == sorted(scores, reverse=True)


def test_ppr_matches_the_closed_form_on_two_nodes():
    # Two nodes, one edge, restart at node 0 with probability 1 - d:
    # p0 = (1 - d) + d * p1 and p1 = d * p0  =>  p0 = 1 / (1 + d).
    d = 0.5
    scores = personalized_pagerank(_path_graph(2), np.array([1.0, 0.0]), damping=d)
    assert scores[0] == pytest.approx(1 / (1 + d), abs=1e-6)


def test_ppr_ignores_reset_scale_and_rejects_an_empty_reset():
    graph = _path_graph(4)
    a = personalized_pagerank(graph, np.array([2.0, 0, 1, 0]))
    b = personalized_pagerank(graph, np.array([0.2, 0, 0.1, 0]))
    assert np.allclose(a, b)
    with pytest.raises(ValueError, match="no positive entry"):
        personalized_pagerank(graph, np.zeros(4))


def test_fact_seeds_divide_by_node_specificity_and_average_over_facts():
    passage_count = np.array([1.0, 4.0, 2.0])
    seeds = fact_seed_weights([([0, 1], 1.0), ([1, 2], 0.5)], passage_count, k=5)
    assert seeds[0] == pytest.approx(1.0)
    assert seeds[1] == pytest.approx((1.0 / 4 + 0.5 / 4) / 2)
    assert seeds[2] == pytest.approx(0.25)
    assert list(fact_seed_weights([([0, 1], 1.0), ([1, 2], 0.5)], passage_count, k=1)) == [0]


def test_link_seeds_keep_the_best_link_and_skip_unsupported_nodes():
    passage_count = np.array([2.0, 0.0, 1.0])
    seeds = link_seed_weights([(0, 0.9), (0, 0.5), (1, 1.0), (2, 0.7)], passage_count, k=5)
    assert seeds == {0: pytest.approx(0.45), 2: pytest.approx(0.7)}


def test_fuse_scales_each_source_to_one_before_mixing():
    fused = fuse_seeds({0: 0.2, 1: 0.1}, {1: 10.0}, fact_share=0.5)
    assert fused[0] == pytest.approx(0.5)
    assert fused[1] == pytest.approx(0.25 + 0.5)
    assert fuse_seeds({}, {3: 2.0}, 0.5) == {3: pytest.approx(0.5)}


def test_passage_readouts():
    # vertices: 0, 1 passages; 2, 3 entities. Passage 0 mentions 2 and 3, passage 1 mentions 3.
    ppr = np.array([0.1, 0.3, 0.4, 0.2])
    incidence = sparse.csr_matrix(([1.0, 1.0, 1.0], ([0, 0, 1], [2, 3, 3])), shape=(4, 4))
    passages = np.array([0, 1])
    assert np.allclose(passage_mass(ppr, passages, incidence, "passage"), [0.1, 0.3])
    assert np.allclose(passage_mass(ppr, passages, incidence, "incidence"), [0.6, 0.2])
    assert np.allclose(passage_mass(ppr, passages, incidence, "blend", 0.5), [0.5, 0.5])
    assert np.allclose(minmax(np.array([3.0, 3.0])), [1.0, 1.0])


def test_synonyms_only_above_threshold_and_never_for_short_names():
    vectors = np.array([[1.0, 0.0], [0.96, 0.28], [0.0, 1.0], [1.0, 0.0]], dtype=np.float32)
    ids, keys = ["e:a", "e:b", "e:c", "e:d"], ["alpha", "alphas", "gamma", "ab"]
    edges = synonym_edges(ids, keys, vectors, ids, vectors, threshold=0.9, max_neighbors=10)
    pairs = {(e.a, e.b) for e in edges}
    assert ("e:a", "e:b") in pairs
    assert all("e:c" not in pair for pair in pairs)
    # "ab" is too short to be queried, but others may still link to it.
    assert ("e:a", "e:d") in pairs and all(e.a < e.b for e in edges)


def _projection() -> GraphProjection:
    return GraphProjection.from_data(GraphData(
        passages=[("p1", "org"), ("p2", "user:ann")],
        entities=["e1", "e2", "e3"],
        facts=[("f1", "e1", "e2", "p1"), ("f2", "e2", "e3", "p2")],
        mentions=[("p1", "e1"), ("p1", "e2"), ("p2", "e2"), ("p2", "e3")],
        synonyms=[("e1", "e3", 0.9)],
    ))


def test_projection_counts_edges_by_kind():
    projection = _projection()
    assert projection.edge_counts() == {"relation": 2, "mention": 4, "synonym": 1}
    view = projection.view(None)
    e2 = projection.vertex["e2"]
    assert view.passage_count[e2] == 2


def test_view_for_a_space_drops_edges_derived_only_from_hidden_passages():
    projection = _projection()
    view = projection.view(frozenset({"org"}))
    v = projection.vertex
    assert view.graph.vcount() == projection.vertex_count  # ids stay aligned
    assert list(view.passage_vertices) == [v["p1"]]
    assert view.passage_count[v["e3"]] == 0 and view.passage_count[v["e2"]] == 1
    neighbours = {projection.record_ids[n] for n in view.graph.neighbors(v["e3"])}
    assert neighbours == set()  # relation via p2, mention by p2 and the synonym to e3 are hidden
    reset = np.zeros(view.graph.vcount())
    reset[v["e1"]] = 1.0
    scores = personalized_pagerank(view.graph, reset)
    assert scores[v["p2"]] == 0 and scores[v["e3"]] == 0


def test_incremental_add_equals_building_at_once():
    whole = _projection()
    parts = GraphProjection()
    parts.add(GraphData([("p1", "org")], ["e1", "e2"], [("f1", "e1", "e2", "p1")],
                        [("p1", "e1"), ("p1", "e2")], []))
    parts.add(GraphData([("p2", "user:ann")], ["e3"], [("f2", "e2", "e3", "p2")],
                        [("p2", "e2"), ("p2", "e3")], [("e1", "e3", 0.9)]))
    reset = np.ones(whole.vertex_count)
    a = personalized_pagerank(whole.view(None).graph, reset)
    b = personalized_pagerank(parts.view(None).graph, reset)
    for rid, vid in whole.vertex.items():
        assert a[vid] == pytest.approx(b[parts.vertex[rid]])


def test_power_iteration_matches_igraph_prpack():
    graph = ig.Graph.Barabasi(500, 3, directed=False)
    graph.add_vertices(3)  # isolated vertices: their mass restarts
    graph.es["weight"] = np.random.default_rng(1).uniform(0.2, 2.0, graph.ecount()).tolist()
    graph.add_edges([(0, 1)], attributes={"weight": [0.7]})  # a parallel edge adds up
    reset = np.zeros(graph.vcount())
    reset[[3, 10, 501]] = [1.0, 0.5, 0.2]
    from hippo.graph import Transition, power_pagerank

    ours = power_pagerank(Transition.of(graph), reset, damping=0.5)
    theirs = personalized_pagerank(graph, reset, damping=0.5)
    assert ours.sum() == pytest.approx(1.0)
    assert np.allclose(ours, theirs, atol=1e-8)


def test_top_indices_are_the_largest_best_first():
    from hippo.graph.scoring import top_indices

    values = np.array([0.1, 0.9, 0.5, 0.7, 0.3])
    assert top_indices(values, 3).tolist() == [1, 3, 2]
    assert top_indices(values, 10).tolist() == [1, 3, 2, 4, 0]
    assert top_indices(values, 0).tolist() == []


@pytest.mark.parametrize("shape", ["uniform", "ties", "sorted", "few above zero", "high where sampled"])
def test_the_kth_largest_is_partitions_answer_whatever_the_sample_sees(shape):
    """``kth_largest`` bounds a large array's k-th value by a strided sample first; a sample that
    bounds it too high (sorted rows, a few hits among zeros) must fall back, never answer wrong."""
    from hippo.graph.scoring import SAMPLE, kth_largest

    rng = np.random.default_rng(7)
    for n in (1, 50, 4 * SAMPLE + 1, 120_000):
        values = rng.random(n)
        if shape == "ties":
            values = np.round(values * 4)
        elif shape == "sorted":
            values = np.sort(values)
        elif shape == "few above zero":
            values = np.zeros(n)
            values[rng.integers(n, size=3)] = 1.0
        elif shape == "high where sampled":  # the bound lands above the k-th: only a fallback answers right
            values[:: max(1, n // SAMPLE)] += 1.0
        for k in (1, 10, 200, n // 24, n):
            if 1 <= k <= n:
                assert kth_largest(values, k) == np.partition(values, n - k)[n - k]


def test_a_reader_who_finds_nothing_pending_finds_every_entry_in_the_runs(monkeypatch):
    """Readers check ``has_pending`` without the lock and then read ``runs`` (``GraphView.first_passages``
    on a recall's side thread while its own thread seals): at every moment of a seal, nothing pending
    must mean the runs hold every entry. Stop 42's CI caught a recall whose seeds all lost their names
    to the moment between the two."""
    from hippo import runs as runs_module

    entries = runs_module.SortedRuns({"targets": np.int64})
    entries.add(np.array([2, 0, 1]), targets=np.array([7, 8, 9]))
    seen: list[tuple[bool, int]] = []

    class Watched(runs_module.Column):
        def __init__(self, *args, **kwargs):  # noqa: ANN002, ANN003 - every moment a seal empties a column
            super().__init__(*args, **kwargs)
            seen.append((entries.has_pending, sum(r.size for r in entries.runs)))

    monkeypatch.setattr(runs_module, "Column", Watched)
    entries.seal(3)
    assert seen and all(pending or held == 3 for pending, held in seen)
    assert not entries.has_pending and entries.size == 3
