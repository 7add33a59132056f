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


def _walk_case() -> tuple[ig.Graph, np.ndarray, np.ndarray, np.ndarray, CsrAdjacency]:
    """A graph, a reset (seeds, weights), its exact PPR, and the graph's CSR adjacency."""
    graph = _graph()
    seeds, weights = np.array([5, 17, 3_000, 40]), np.array([1.0, 0.5, 0.2, 0.3])
    reset = np.zeros(graph.vcount())
    reset[seeds] = weights
    return graph, seeds, weights, power_pagerank(Transition.of(graph), reset, damping=0.5), CsrAdjacency.of_graph(graph)


def test_push_converges_to_the_exact_ppr_as_epsilon_shrinks():
    graph, seeds, weights, exact, adjacency = _walk_case()
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


class _Remote:
    """A ``RemoteAdjacency`` over a CSR: vertices read before (or ``warm``) are local, a read of
    any other is a round trip. ``deferring`` False: it does not say what is local (read wave by wave)."""

    def __init__(self, adjacency: CsrAdjacency, warm: np.ndarray, deferring: bool = True) -> None:
        self.adjacency, self.held, self.trips = adjacency, set(warm.tolist()), 0
        self.vertex_count, self.strength = adjacency.vertex_count, adjacency.strength
        if deferring:
            self.local = self._held

    def _held(self, vertices: np.ndarray) -> np.ndarray:
        return np.array([v in self.held for v in vertices.tolist()], dtype=bool)

    def neighbours(self, vertices: np.ndarray):
        self.trips += not self._held(vertices).all()
        self.held.update(vertices.tolist())
        return self.adjacency.neighbours(vertices)


def test_a_remote_walk_pushes_what_it_holds_first_and_waits_on_fewer_round_trips():
    """Pushing the vertices read without a round trip first keeps the push's bound (the same
    error against the exact PPR, the same top 10) and reads the others in fewer round trips."""
    graph, seeds, weights, exact, adjacency = _walk_case()
    error = np.abs(_dense(push_pagerank(adjacency, seeds, weights, epsilon=1e-6), graph.vcount()) - exact).sum()
    hubs = np.argsort(-adjacency.strengths)[:300]  # a warm cache: the vertices most walks reach
    for warm in (np.zeros(0, dtype=np.int64), hubs):
        remote, waves = _Remote(adjacency, warm), _Remote(adjacency, warm, deferring=False)
        pushed = _dense(push_pagerank(remote, seeds, weights, epsilon=1e-6), graph.vcount())
        push_pagerank(waves, seeds, weights, epsilon=1e-6)
        assert (pushed <= exact + 1e-12).all() and np.abs(pushed - exact).sum() < 1.5 * error
        assert len(set(np.argsort(-exact)[:10].tolist()) & set(np.argsort(-pushed)[:10].tolist())) >= 9
        assert remote.trips < waves.trips


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


def _corpus(passages: int, seed: int, spaces: tuple[str, ...] = ("org",)) -> list[GraphData]:
    """A random passage-entity graph in write batches of 50 passages (so the projection holds
    several edge runs), with relations and synonyms, passages spread over ``spaces``."""
    rng = np.random.default_rng(seed)
    entities = [f"e{i}" for i in range(passages)]
    batches = []
    for start in range(0, passages, 50):
        ids = [f"p{i}" for i in range(start, min(start + 50, passages))]
        named = {p: sorted({entities[int(x)] for x in rng.zipf(1.6, size=6) % passages}) for p in ids}
        batches.append(GraphData(
            passages=[(p, spaces[int(rng.integers(len(spaces)))]) for p in ids],
            entities=sorted({e for names in named.values() for e in names}),
            facts=[(f"f{p}-{i}", a, b, p) for p, names in named.items()
                   for i, (a, b) in enumerate(zip(names, names[1:]))],
            mentions=[(p, e) for p, names in named.items() for e in names],
            synonyms=[(entities[int(a)], entities[int(b)], 0.85) for a, b in rng.integers(0, start + 50, (5, 2))
                      if a != b and max(a, b) < start + 50],
        ))
    return batches


def _projection(batches: list[GraphData]) -> GraphProjection:
    projection = GraphProjection()
    for batch in batches:
        known = set(projection.vertex)
        projection.add(GraphData(passages=batch.passages, entities=[e for e in batch.entities if e not in known],
                                 facts=batch.facts, mentions=batch.mentions, synonyms=batch.synonyms))
        projection.seal()  # a run per batch, merged by size as writes would
    return projection


@pytest.mark.parametrize("spaces", [None, frozenset({"org"}), frozenset({"user:ann", "team:x"})])
def test_the_compiled_walk_over_several_runs_matches_exact_on_a_readers_view(spaces):
    projection = _projection(_corpus(600, seed=5, spaces=("org", "user:ann", "team:x")))
    projection.retire([f"p{i}" for i in range(0, 600, 7)])
    assert len(projection.edges.runs) > 1
    view = projection.view(spaces)
    seeds = np.flatnonzero(view.visible(np.arange(projection.vertex_count)))[[0, 5, 40]]
    weights = np.array([1.0, 0.3, 0.6])
    exact = _dense(view.pagerank(seeds, weights, 0.5, solver="exact"), projection.vertex_count)
    errors = []
    for epsilon in (1e-4, 1e-6, 1e-9):
        pushed = view.pagerank(seeds, weights, 0.5, solver="push", epsilon=epsilon)
        assert view.visible(pushed.vertices).all()  # never a hidden passage or entity
        dense = _dense(pushed, projection.vertex_count)
        assert (dense <= exact + 1e-12).all()
        errors.append(np.abs(dense - exact).sum())
    assert errors[0] > errors[1] > errors[2] and errors[2] < 1e-5  # L1 bound: epsilon x total strength


def test_a_walk_over_one_run_is_the_walk_over_the_runs_it_was_merged_from():
    """A reader of every space over one run takes the open loop (``walk_open``), over several the
    general one: a merged run lists each vertex's entries in the runs' order, so both push the
    same vertices in the same order and give the same scores, to the bit."""
    lonely = GraphData(passages=[("lonely", "org")], entities=[], facts=[], mentions=[], synonyms=[])
    projection = _projection([*_corpus(1_000, seed=4), lonely])  # a passage without edges: its mass restarts
    view = projection.view(None)
    assert len(projection.edges.runs) > 1 and not view.visibility.check
    seeds, weights = np.array([3, 77, 900, projection.vertex["lonely"]]), np.array([1.0, 0.5, 0.25, 0.2])
    runs = [view.pagerank(seeds, weights, 0.5, solver="push", epsilon=eps) for eps in (1e-4, 1e-7)]
    projection.edges.merge_tail(projection.vertex_count, 1)
    view = projection.view(None)
    one = [view.pagerank(seeds, weights, 0.5, solver="push", epsilon=eps) for eps in (1e-4, 1e-7)]
    for a, b in zip(runs, one, strict=True):
        assert np.array_equal(a.vertices, b.vertices) and np.array_equal(a.scores, b.scores)
        assert (a.pushes, a.edges) == (b.pushes, b.edges)
    exact = _dense(view.pagerank(seeds, weights, 0.5, solver="exact"), projection.vertex_count)
    assert np.abs(_dense(one[1], projection.vertex_count) - exact).sum() < 1e-3


def test_the_compiled_walk_and_the_wave_push_agree():
    """The two local solvers walk in different orders; both stop within the same bound."""
    projection = _projection(_corpus(2_000, seed=9))
    view = projection.view(None)
    seeds, weights = np.array([3, 77, 1_500]), np.array([1.0, 0.5, 0.25])
    waves = push_pagerank(view, seeds, weights, 0.5, epsilon=1e-6)
    compiled = view.pagerank(seeds, weights, 0.5, solver="push", epsilon=1e-6)
    n = projection.vertex_count
    assert np.abs(_dense(waves, n) - _dense(compiled, n)).sum() < 0.01
    top = lambda s: set(s.vertices[np.argsort(-s.scores)[:10]].tolist())  # noqa: E731
    assert len(top(waves) & top(compiled)) >= 9
    assert compiled.edges <= 1 / (1e-6 * 0.5)


def test_the_compiled_walk_leaves_its_scratch_clean_for_the_next():
    projection = _projection(_corpus(300, seed=2))
    view = projection.view(None)
    first = view.pagerank(np.array([4]), np.array([1.0]), 0.5, solver="push", epsilon=1e-7)
    view.pagerank(np.array([250, 12]), np.array([1.0, 2.0]), 0.5, solver="push", epsilon=1e-7)
    again = view.pagerank(np.array([4]), np.array([1.0]), 0.5, solver="push", epsilon=1e-7)
    assert np.array_equal(first.vertices, again.vertices) and np.array_equal(first.scores, again.scores)


def test_a_walk_extended_by_more_seeds_is_the_walk_from_all_of_them():
    """PPR is linear in its reset: recall's bridge hop adds a walk from its few seeds alone."""
    from hippo.config import Settings
    from hippo.memory.spread import Walk

    projection = _projection(_corpus(1_500, seed=4))
    source = projection.view(None)  # walks read a source's ``pagerank``, which a view serves as it is
    first, more = (np.array([3, 400, 900]), np.array([1.0, 0.4, 2.0])), (np.array([12, 1_200]), np.array([0.3, 0.1]))
    for solver, epsilon in (("exact", 1e-6), ("push", 1e-8)):
        settings = Settings(ppr_solver=solver, ppr_epsilon=epsilon)
        whole = Walk.of(source, np.concatenate([first[0], more[0]]), np.concatenate([first[1], more[1]]), settings)
        extended = Walk.of(source, *first, settings).extended(source, *more, settings)
        n = projection.vertex_count
        assert extended.mass == pytest.approx(whole.mass)
        assert np.abs(_dense(whole.ppr, n) - _dense(extended.ppr, n)).sum() < 1e-4


class _ViewSource:
    """The parts of a ``RecallSource`` a read-out uses, over a projection's view."""

    def __init__(self, view) -> None:
        self.view = view

    @property
    def visible_passage(self):
        return self.view.visible_passage

    def pagerank(self, *args, **kwargs):
        return self.view.pagerank(*args, **kwargs)

    def passage_readout(self, scores, readout, blend):
        return self.view.passage_scores(scores, readout, blend)


@pytest.mark.parametrize("at_bound", [False, True])
def test_a_readout_of_the_best_few_asks_the_tail_only_of_passages_it_could_lift(at_bound):
    """``readout(top=k)``: the k best passages and their scores are those of the full read-out,
    and the tail is asked of fewer passages (a store-side reader pays a read for each)."""
    from hippo.config import Settings
    from hippo.memory.spread import Tail, Walk, readout

    projection = _projection(_corpus(1_500, seed=6))
    source = _ViewSource(projection.view(None))
    settings = Settings(ppr_solver="push", ppr_epsilon=1e-8)
    walk = Walk.of(source, np.array([3, 400, 900, 1_100]), np.array([1.0, 0.4, 2.0, 0.7]), settings)
    rng = np.random.default_rng(0)
    bound = 0.002  # small beside the seeds' mass, as in recall (where it is the M-th dense passage's prior)
    prior = bound * (np.ones(projection.vertex_count) if at_bound else rng.uniform(0, 1, projection.vertex_count))
    asked: list[int] = []

    def weights(vertices: np.ndarray) -> np.ndarray:
        asked.extend(vertices.tolist())
        return np.where(source.visible_passage[vertices], prior[vertices], 0.0)

    tail = Tail(weights, bound=bound)
    everything, full = readout(source, walk, settings, tail)
    everyone = len(asked)
    asked.clear()
    few, pruned = readout(source, walk, settings, tail, top=20)
    best = lambda vertices, mass: [(int(vertices[i]), float(mass[i])) for i in np.argsort(-mass, kind="stable")[:20]]  # noqa: E731
    assert best(few, pruned) == best(everything, full)
    assert 20 <= len(asked) < everyone / 2


def test_a_readers_walk_is_the_same_whatever_it_cannot_see():
    """The same visible graph, then two different hidden spaces leaning on its entities (one makes
    hubs of them): a reader of the visible space gets the same scores from either, at an epsilon
    where when a vertex is pushed moves them (a vertex's strength counts only what the reader sees)."""
    visible = _corpus(400, seed=3)
    entities = sorted({e for batch in visible for e in batch.entities})

    def hidden(seed: int, per_passage: int) -> GraphData:
        rng = np.random.default_rng(seed)
        ids = [f"h{seed}-{i}" for i in range(200)]
        named = {p: sorted({entities[int(x)] for x in rng.integers(0, 40, per_passage)}) for p in ids}
        return GraphData(passages=[(p, "user:ann") for p in ids], entities=[],
                         facts=[(f"f{p}", names[0], names[-1], p) for p, names in named.items() if len(names) > 1],
                         mentions=[(p, e) for p, names in named.items() for e in names], synonyms=[])

    walks = []
    for extra in (hidden(1, 12), hidden(2, 1)):
        projection = _projection([*visible, extra])
        view = projection.view(frozenset({"org"}))
        seeds = np.array([projection.vertex[e] for e in entities[:3]])
        walks.append(view.pagerank(seeds, np.array([1.0, 0.5, 0.25]), 0.5, solver="push", epsilon=1e-4))
        assert view.visible(walks[-1].vertices).all()
    assert len(walks[0].vertices) > 20 and np.array_equal(walks[0].vertices, walks[1].vertices)
    np.testing.assert_allclose(walks[0].scores, walks[1].scores, rtol=0, atol=1e-15)


@pytest.mark.parametrize("unread_max", [20_000, 0])
def test_a_readers_walk_is_the_walk_of_a_store_holding_only_what_it_sees(unread_max, monkeypatch):
    """A reader of "org" in a store that also holds a hidden space (hubs of "org"'s entities, entities
    of its own with synonyms to them) and a forgotten "org" passage walks as a store holding only
    the live "org" passages does: the same vertices pushed as often, the same scores. The walk
    schedules a vertex by its strength over what the reader may walk: worked out by the view from
    the hidden space's passages while they are few (``UNREAD_MAX``), else read only when its
    residual lies between what the reader sees of it for sure and its strength over every entry."""
    monkeypatch.setattr("hippo.graph.view.UNREAD_MAX", unread_max)
    visible = _corpus(400, seed=11)
    entities = sorted({e for batch in visible for e in batch.entities})
    rng = np.random.default_rng(4)
    ids = [f"h{i}" for i in range(150)]
    named = {p: sorted({entities[int(x)] for x in rng.integers(0, 30, 10)} | {f"secret{i % 7}"})
             for i, p in enumerate(ids)}
    hidden = GraphData(passages=[(p, "user:ann") for p in ids] + [("gone", "org")],
                       entities=[f"secret{i}" for i in range(7)],
                       facts=[(f"f{p}", names[0], names[-1], p) for p, names in named.items()]
                       + [("f-gone", entities[0], entities[1], "gone")],
                       mentions=[(p, e) for p, names in named.items() for e in names]
                       + [("gone", e) for e in entities[:20]],
                       synonyms=[(f"secret{i}", entities[i], 0.9) for i in range(7)])
    alone = _projection(visible)
    shared = _projection([*visible, hidden])
    shared.retire(["gone"])
    assert all(shared.vertex[e] == alone.vertex[e] for e in entities)  # hidden vertices come after
    seeds = np.array([alone.vertex[e] for e in entities[:4]])
    weights = np.array([1.0, 0.5, 0.25, 0.1])
    everything = alone.view(None)
    want = everything.pagerank(seeds, weights, 0.5, solver="push", epsilon=1e-4)
    view = shared.view(frozenset({"org"}))
    assert view.visibility.check and not everything.visibility.check  # each entry checked, or none
    assert view.visibility.exact == (unread_max > 0)
    got = view.pagerank(seeds, weights, 0.5, solver="push", epsilon=1e-4)
    assert len(want.vertices) > 50 and np.array_equal(got.vertices, want.vertices)
    assert got.pushes == want.pushes
    np.testing.assert_allclose(got.scores, want.scores, rtol=1e-9, atol=0)  # strengths summed in other orders


def test_the_vertices_a_walk_reached_come_back_in_order_whichever_way_they_are_ordered():
    """``in_order`` marks and reads back while a walk reached many of the vertices, else sorts: the
    same ascending int64 either way, each score still with its vertex, and the marks it used are
    cleared for the next walk."""
    from hippo.graph.ppr import Workspace
    from hippo.graph.push import in_order

    workspace = Workspace()
    rng = np.random.default_rng(5)
    for n, count in ((1_000, 900), (1_000, 100), (1_000, 300), (100_000, 50), (1, 1), (10, 0)):
        vertices = rng.permutation(n)[:count].astype(np.int32)
        scores = rng.random(count)
        got, got_scores = in_order(vertices, scores, n, workspace)
        assert got.dtype == np.int64 and np.array_equal(got, np.sort(vertices))
        assert np.array_equal(got_scores, scores[np.argsort(vertices)])
    assert not workspace.array("in_order", bool, 1_000).any()  # left clean


def test_first_seen_keeps_each_value_once_in_the_order_it_first_appears():
    """The store-side walk numbers a wave's new nodes in the order met with ``first_seen``: the same as
    ``dict.fromkeys``, whatever the scratch held before (it is reused, never cleared)."""
    from hippo.graph.ppr import Workspace

    workspace = Workspace()
    rng = np.random.default_rng(11)
    for n, high in ((0, 1), (1, 1), (50, 5), (3_000, 200), (30_000, 1_000_000), (500, 3)):
        values = rng.integers(0, high, n)
        got = workspace.first_seen(values)
        assert got.dtype == np.int64
        assert got.tolist() == list(dict.fromkeys(values.tolist()))
    assert workspace.first_seen(np.array([7, 2, 7, 0, 2, 9])).tolist() == [7, 2, 0, 9]  # after larger scratch use


def test_a_prefetch_is_only_a_hint():
    """``prefetch`` (the walks ask for what they read next) compiles into a loop and changes nothing
    it computes, also when it hints past an array's end; anything but a 1-d array and an integer
    index is refused when the loop compiles."""
    import numba
    from numba.core.errors import TypingError

    from hippo.graph.prefetch import prefetch

    @numba.njit
    def hinted(values, ahead):
        total = 0.0
        for i in range(len(values)):
            prefetch(values, i + ahead)  # near the end, past it: a wasted hint, never a fault
            total += values[i] * i
        return total

    @numba.njit
    def plain(values):
        total = 0.0
        for i in range(len(values)):
            total += values[i] * i
        return total

    values = np.random.default_rng(3).random(50_000)
    assert hinted(values, 8) == plain(values)
    assert hinted(values, 100_000) == plain(values)

    @numba.njit
    def on_a_matrix(values):
        prefetch(values, 0)

    with pytest.raises(TypingError):
        on_a_matrix(np.zeros((2, 2)))
