"""Local push PPR against the exact power iteration, on hand-made and random graphs (pure functions)."""

import igraph as ig
import numpy as np
import pytest

from hippo.graph.ppr import CsrAdjacency, Transition, power_pagerank, push_pagerank


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
