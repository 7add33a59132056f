"""What no reader may walk (``hippo.graph.hidden``): kept by the writes, exact, and what a reader
of every space walks by after a forget."""

import numpy as np
import pytest

from hippo.graph import GraphProjection
from hippo.graph.hidden import unwalkable
from hippo.store import GraphData
from tests.test_push import _corpus, _projection


def _recounted(projection: GraphProjection) -> np.ndarray:
    return unwalkable(projection, np.arange(projection.vertex_count))


def _doomed(entities: list[str]) -> GraphData:
    """Passages of "org" to forget: some entities only they mention ("lonely*", with synonyms to
    kept entities none of them mention), facts between kept entities (one between two its passage
    does not mention), mentions of kept hubs."""
    ids = [f"d{i}" for i in range(30)]
    named = {p: sorted({entities[i % 25], entities[(7 * i) % 40], f"lonely{i % 6}"}) for i, p in enumerate(ids)}
    return GraphData(passages=[(p, "org") for p in ids], entities=[f"lonely{i}" for i in range(6)],
                     facts=[(f"f{p}", names[0], names[1], p) for p, names in named.items()]
                     + [("f-unmentioned", entities[60], entities[61], "d0")],
                     mentions=[(p, e) for p, names in named.items() for e in names],
                     synonyms=[(f"lonely{i}", entities[50 + i], 0.9) for i in range(6)])


def test_the_writes_keep_hidden_equal_to_a_count_from_scratch():
    """Retire, revive, retire again, then a new passage brings a lonely entity back (its synonyms
    walkable again), then a save and load: after each, ``hidden`` is what a full recount gives."""
    kept = _corpus(300, seed=5)
    entities = sorted({e for batch in kept for e in batch.entities})
    projection = _projection([*kept, _doomed(entities)])
    assert not projection.hidden.values.any()  # nothing forgotten: nothing hidden
    doomed = [f"d{i}" for i in range(30)]
    steps = [lambda: projection.retire(doomed), lambda: projection.revive(doomed[:10]),
             lambda: projection.retire(doomed[:5]),
             lambda: projection.add(GraphData(passages=[("back", "org")], entities=[], facts=[],
                                              mentions=[("back", "lonely4")], synonyms=[]))]
    for step in steps:
        step()
        assert projection.hidden.values.any()
        np.testing.assert_allclose(projection.hidden.values, _recounted(projection), rtol=1e-12, atol=0)
    lonely = projection.vertex["lonely4"]
    assert projection.hidden[lonely] > 0 and projection.view(None).walk_strength(np.array([lonely]))[0] > 0
    loaded = GraphProjection.from_arrays(projection.arrays(), projection.space_names)
    np.testing.assert_allclose(loaded.hidden.values, projection.hidden.values, rtol=1e-12, atol=0)


def test_a_reader_of_every_space_walks_after_a_forget_as_a_store_that_never_held_it():
    """After a forget, a reader of everything walks by ``strength - hidden`` (no strength read entry
    by entry): the same vertices, pushes and scores as a store that never held the forgotten
    passages, and the same visible strengths at the read-out."""
    kept = _corpus(400, seed=9)
    entities = sorted({e for batch in kept for e in batch.entities})
    alone = _projection(kept)
    shared = _projection([*kept, _doomed(entities)])
    shared.retire([f"d{i}" for i in range(30)])
    seeds = np.array([alone.vertex[e] for e in entities[:4]])
    weights = np.array([1.0, 0.5, 0.25, 0.1])
    never, after = alone.view(None), shared.view(None)
    assert after.visibility.check and after.covers and not never.visibility.check
    want = never.pagerank(seeds, weights, 0.5, solver="push", epsilon=1e-4)
    got = after.pagerank(seeds, weights, 0.5, solver="push", epsilon=1e-4)
    assert len(want.vertices) > 50 and np.array_equal(got.vertices, want.vertices)
    assert got.pushes == want.pushes
    # strengths summed in other orders (each vertex's entries sit in other runs): 1e-16 apart, ~1e-9 after the walk
    np.testing.assert_allclose(got.scores, want.scores, rtol=1e-8, atol=0)
    # a store's strength adds weights at float64, a walk reads them at float32: 0.85 is 0.85000002
    np.testing.assert_allclose(after.walk_strength(want.vertices), never.walk_strength(want.vertices), rtol=1e-7)


@pytest.mark.parametrize("spaces", [frozenset({"org", "user:ann"}), frozenset({"user:ann", "team:x"}),
                                    frozenset({"org", "team:x", "user:bob"})])
def test_what_a_reader_may_not_walk_is_what_its_view_hides(spaces):
    """``unread`` (from the other spaces' passages) and ``hidden`` give each vertex the strength a
    reader of some spaces walks: the sum of the entries its view keeps, vertex by vertex, after a
    forget in a space it reads and one in a space it does not."""
    projection = _projection(_corpus(400, seed=13, spaces=("org", "user:ann", "team:x")))
    projection.retire(["p3", "p17", "p250"])
    view = projection.view(spaces)
    assert view.unread is not None and len(view.unread[0])
    everything = np.arange(projection.vertex_count)
    owners, columns = view.entries(everything)
    want = np.bincount(owners, weights=columns["weights"].astype(np.float64), minlength=len(everything))
    # where nothing is hidden from it, its strength is the store's (weights added at float64)
    np.testing.assert_allclose(view.walk_strength(everything), want, rtol=1e-7, atol=1e-12)
    assert projection.view(frozenset({"user:nobody"})).unread is None  # it sees nothing: not worked out
