"""Local push PPR against the exact power iteration, on hand-made and random graphs (pure functions)."""

import igraph as ig
import numpy as np
import pytest

from hippo.graph import CsrAdjacency, GraphProjection, Transition, power_pagerank, push_pagerank
from hippo.store import GraphData


def _graph(n: int = 3_000, seed: int = 1) -> ig.Graph:
    graph = ig.Graph.Barabasi(n, 3, directed=False)
    graph.add_vertices(2)  # isolated: a walk there restarts
    graph.es["weight"] = np.random.default_rng(seed).uniform(0.2, 2.0, graph.ecount()).tolist()
    graph.add_edges([(0, 1)], attributes={"weight": [0.7]})  # a parallel edge adds up
    return graph


def _dense(scores, n: int) -> np.ndarray:
    out = np.zeros(n)
    out[scores.vertices] = scores.scores
    return out


def test_push_converges_to_the_exact_ppr_as_epsilon_shrinks():
    graph = _graph()
    seeds, weights = np.array([5, 17, 3_000, 40]), np.array([1.0, 0.5, 0.2, 0.3])
    reset = np.zeros(graph.vcount())
    reset[seeds] = weights
    exact = power_pagerank(Transition.of(graph), reset, damping=0.5)
    adjacency = CsrAdjacency.of_graph(graph)
    errors = []
    for epsilon in (1e-4, 1e-6, 1e-8):
        pushed = _dense(push_pagerank(adjacency, seeds, weights, damping=0.5, epsilon=epsilon), graph.vcount())
        errors.append(np.abs(pushed - exact).sum())
        assert (pushed <= exact + 1e-12).all()  # push only ever falls short of the exact mass
    assert errors[0] > errors[1] > errors[2] and errors[2] < 1e-3
    top = set(np.argsort(-exact)[:10].tolist())
    pushed = _dense(push_pagerank(adjacency, seeds, weights, damping=0.5, epsilon=1e-6), graph.vcount())
    assert len(top & set(np.argsort(-pushed)[:10].tolist())) >= 9


def test_push_work_does_not_grow_with_the_graph():
    """The same seeds in a graph with a huge component they cannot reach: same scores, same work."""
    small = _graph(500)
    big = small.copy()
    big.add_vertices(50_000)
    far = np.random.default_rng(3).integers(502, 50_502, size=(200_000, 2))
    big.add_edges(far.tolist(), attributes={"weight": [1.0] * len(far)})
    seeds, weights = np.array([3, 9]), np.array([1.0, 1.0])
    a = push_pagerank(CsrAdjacency.of_graph(small), seeds, weights, epsilon=1e-6)
    b = push_pagerank(CsrAdjacency.of_graph(big), seeds, weights, epsilon=1e-6)
    assert a.edges == b.edges and np.array_equal(a.vertices, b.vertices)
    assert np.allclose(a.scores, b.scores)
    assert a.edges <= 1 / (1e-6 * 0.5)  # the Andersen-Chung-Lang bound


def test_push_rejects_an_empty_reset_and_ignores_its_scale():
    adjacency = CsrAdjacency.of_graph(_graph(200))
    with pytest.raises(ValueError, match="no positive entry"):
        push_pagerank(adjacency, np.array([1]), np.array([0.0]))
    a = push_pagerank(adjacency, np.array([1, 2]), np.array([2.0, 1.0]), epsilon=1e-7)
    b = push_pagerank(adjacency, np.array([1, 2]), np.array([0.2, 0.1]), epsilon=1e-7)
    assert np.array_equal(a.vertices, b.vertices) and np.allclose(a.scores, b.scores)


def _spaces_projection() -> GraphProjection:
    """Two spaces sharing entity e2; e1-e3 linked by a synonym; p3 is retired later."""
    return GraphProjection.from_data(GraphData(
        passages=[("p1", "org"), ("p2", "user:ann"), ("p3", "org")],
        entities=["e1", "e2", "e3", "e4"],
        facts=[("f1", "e1", "e2", "p1"), ("f2", "e2", "e3", "p2"), ("f3", "e1", "e4", "p3")],
        mentions=[("p1", "e1"), ("p1", "e2"), ("p2", "e2"), ("p2", "e3"), ("p3", "e1"), ("p3", "e4")],
        synonyms=[("e1", "e3", 0.9), ("e2", "e4", 0.85)],
    ))


@pytest.mark.parametrize("spaces", [None, frozenset({"org"}), frozenset({"user:ann"})])
def test_push_on_a_readers_view_matches_exact_and_never_leaves_it(spaces):
    projection = _spaces_projection()
    projection.retire(["p3"])
    view = projection.view(spaces)
    v = projection.vertex
    seed = v["e2"]
    exact = view.pagerank(np.array([seed]), np.array([1.0]), 0.5, solver="exact")
    pushed = view.pagerank(np.array([seed]), np.array([1.0]), 0.5, solver="push", epsilon=1e-10)
    n = projection.vertex_count
    assert np.allclose(_dense(exact, n), _dense(pushed, n), atol=1e-8)
    reached = {projection.record_ids[u] for u in pushed.vertices.tolist()}
    assert "p3" not in reached and "e4" not in reached  # retired passage and what only it supported
    if spaces == frozenset({"org"}):
        assert reached <= {"p1", "e1", "e2"}  # e3 and p2 live only in user:ann
    if spaces == frozenset({"user:ann"}):
        assert reached <= {"p2", "e2", "e3"}


def test_view_visibility_follows_retire_and_revive_incrementally():
    projection = _spaces_projection()
    view = projection.view(frozenset({"org"}))
    v = projection.vertex
    assert view.passage_count[v["e4"]] == 1 and view.passage_count[v["e1"]] == 2
    projection.retire(["p3"])
    view = projection.view(frozenset({"org"}))
    assert view.passage_count[v["e4"]] == 0 and view.passage_count[v["e1"]] == 1
    assert view.passage_total == 1 and not view.visible_passage[v["p3"]]
    projection.revive(["p3"])
    view = projection.view(frozenset({"org"}))
    assert view.passage_count[v["e4"]] == 1 and view.passage_total == 2
    whole = _spaces_projection().view(frozenset({"org"}))
    assert np.allclose(view.adjacency_matrix().toarray(), whole.adjacency_matrix().toarray())
