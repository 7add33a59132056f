"""What store-side recalls keep between queries (``hippo.memory.store_cache``) and the reads they start
ahead (``hippo.memory.ahead``), without a database."""

import numpy as np
import pytest

from hippo.errors import StoreError
from hippo.memory.store_cache import EdgeCache, Fetched, NodeTable, ReaderCache
from hippo.memory.store_names import Names


def test_names_intern_each_id_once_and_remember_which_are_passages():
    names = Names()
    first = names.of(["p1", "e1", "p1", "e2"], np.array([True, False, True, False]))
    assert first.tolist() == [0, 1, 0, 2]
    assert names.of(["e2", "e3"], False).tolist() == [2, 3]
    assert names.passage[:4].tolist() == [True, False, False, False]
    assert len(names) == 4 and names.ids == ["p1", "e1", "e2", "e3"]


def test_names_are_bound_to_node_ids_and_stay_bound():
    names = Names()
    assert names.by_keys(np.array([11, 12])).tolist() == [-1, -1]
    names.bind(np.array([12, 11]), names.of(["e1", "p1"], np.array([False, True])))
    assert names.by_keys(np.array([11, 19, 12])).tolist() == [1, -1, 0]


def test_a_recall_numbers_handles_in_the_order_it_meets_records_whatever_earlier_recalls_met():
    """Handles break ties in a walk: a recall over a reader's shared names numbers them as one
    over fresh names would, so what earlier recalls read changes no answer."""
    shared = Names()
    NodeTable(100, shared).handles(["z", "y", "x", "w"], False)  # an earlier recall, other records first
    fresh, reused = NodeTable(100), NodeTable(100, shared)
    for table in (fresh, reused):
        assert table.handles(["a", "x", "b"], False).tolist() == [0, 1, 2]
        targets = table.names.of(["b", "w", "c", "w", "a"], np.array([False, False, True, False, False]))
        assert table.of_names(targets).tolist() == [2, 3, 4, 3, 0]
        assert table.passage[:5].tolist() == [False, False, False, False, True]
        assert table.find("w") == 3 and table.find("nowhere") is None
        assert [table.ids[h] for h in range(5)] == ["a", "x", "b", "w", "c"]
    assert NodeTable(100, shared).find("z") is None  # a new recall has met nothing yet


def test_a_recall_touching_more_nodes_than_its_bound_is_a_store_error_naming_the_setting():
    table = NodeTable(1024)
    table.handles([f"e{i}" for i in range(1024)], False)
    with pytest.raises(StoreError, match="neo4j_read_nodes"):
        table.handle("one-more", False)


class _Store:
    """What a moving cache reads of the store: each write's changed nodes, and strengths."""

    def __init__(self, writes: list[list[str] | None] | None = None, since: int = 0) -> None:
        self.writes, self.since = writes, since

    def changes(self, since: int, until: int) -> list[list[str] | None] | None:
        assert self.writes is not None, "no write happened"
        return self.writes if since == self.since and until - since == len(self.writes) else None

    def strengths(self, ids: list[str]) -> dict[str, float | None]:
        return {rid: 10.0 + len(rid) for rid in ids}


_unasked = _Store()


def test_a_reader_cache_moves_to_a_new_revision_without_what_the_writes_changed():
    cache = ReaderCache(capacity=10, revision=7, names_capacity=10)
    names = cache.names.of(["p", "e", "f", "q"], np.array([True, False, False, True]))
    # p - e - f, and q alone: p's edge to e, e's to p and f, f's to e
    cache.edges.add(names, np.array([1, 2, 1, 0]), np.array([1, 0, 2, 1]), np.ones(4), np.zeros(4, dtype=np.int8),
                    np.array([0, 1, 1, 0]))
    cache.edges.learn(names[:3], np.full(3, 3.0))
    assert cache.fresh(7, _unasked) is cache
    moved = cache.fresh(9, _Store([["f"], ["elsewhere"]], since=7))
    assert moved.revision == 9 and moved.names is cache.names and moved.frequencies == {}
    # f changed: its edges are read again; e's edge to f carries f's strength as the store has it now
    assert moved.edges.unknown(names).tolist() == [names[2]]
    assert cache.edges.unknown(names).tolist() == []  # a recall still at revision 7 keeps what it had
    lengths, targets, _, _, totals, _, _ = moved.edges.gather(names[[0, 1, 3]])
    assert lengths.tolist() == [1, 2, 0] and targets.tolist() == [names[1], names[0], names[2]]
    assert totals.tolist() == [3.0, 3.0, 11.0]
    assert cache.edges.gather(names[[1]])[4].tolist() == [3.0, 3.0]


def test_a_reader_cache_starts_over_when_it_cannot_know_what_changed_or_it_is_full():
    cache = ReaderCache(capacity=2, revision=7, names_capacity=3)
    cache.names.of(["a", "b"], False)
    assert len(cache.fresh(8, _Store([], since=7)).names) == 0  # a write left no record
    assert len(cache.fresh(8, _Store([None], since=7)).names) == 0  # a write touched too much to list
    assert len(cache.fresh(6, _unasked).names) == 0  # an older revision: another store behind the URL
    cache.names.of(["c"], False)
    assert cache.fresh(7, _unasked) is not cache and len(cache.fresh(7, _unasked).names) == 0


def test_a_full_reader_cache_keeps_the_edges_of_the_nodes_most_recalls_walked():
    """Full, a cache keeps its most used half (the hubs every recall walks through) with their
    edges as they were, not nothing; the names stay, the counts are halved so old favourites age."""
    cache = ReaderCache(capacity=4, revision=3, names_capacity=100)
    ids = [f"e{i}" for i in range(8)]
    names = cache.names.of(ids, False)
    # node i: one edge to node (i + 1) % 8 of weight i, its target's strength 10 + i
    cache.edges.add(names, np.ones(8, dtype=np.int64), np.roll(names, -1), np.arange(8.0),
                    np.zeros(8, dtype=np.int8), np.arange(8))
    cache.edges.learn(np.roll(names, -1), 10.0 + np.arange(8))
    for walked in ([5, 2], [5, 2, 7], [2, 5], [5]):  # four recalls: 5 walked by four, 2 by three
        cache.edges.gather(names[walked])
    cache.frequencies['"w"'] = 4
    kept = cache.fresh(3, _unasked)
    assert kept is not cache and kept.revision == 3 and kept.names is cache.names
    assert kept.frequencies == {'"w"': 4} and len(kept.edges) == 2
    assert kept.edges.unknown(names).tolist() == [names[i] for i in (0, 1, 3, 4, 6, 7)]
    lengths, targets, weights, _, totals, strength, passages = kept.edges.gather(names[[5, 2]])
    assert lengths.tolist() == [1, 1] and targets.tolist() == [names[6], names[3]]
    assert weights.tolist() == [5.0, 2.0] and totals.tolist() == [15.0, 12.0]
    assert strength.tolist() == [5.0, 2.0] and passages.tolist() == [5, 2]
    assert kept.edges.uses[names[[5, 2]]].tolist() == [2 + 1, 1 + 1]  # halved, then this gather
    assert cache.edges.unknown(names).tolist() == []  # a recall still holding the full cache keeps it
    assert kept.fresh(3, _unasked) is kept  # not full any more


def test_a_wave_gathers_its_frontiers_edges_from_every_wave_fetched_before():
    fetched = Fetched()
    assert fetched.missing(np.array([3, 1, 3, 0])).tolist() == [3, 1, 0]  # each once, in the order met
    fetched.add(np.array([3, 1]), np.array([2, 0]), np.array([7, 8]), np.array([0.5, 1.0]), np.array([1, 2]))
    fetched.add(np.array([0]), np.array([1]), np.array([9]), np.array([2.0]), np.array([0]))
    assert fetched.missing(np.array([0, 5, 1, 2, 5])).tolist() == [5, 2]
    owners, targets, weights, kinds = fetched.of(np.array([0, 1, 3, 0]))
    assert owners.tolist() == [0, 2, 2, 3] and targets.tolist() == [9, 7, 8, 9]
    assert weights.tolist() == [2.0, 0.5, 1.0, 2.0] and kinds.tolist() == [0, 1, 2, 0]
    assert fetched.targets_of(3).tolist() == [7, 8] and fetched.targets_of(1).tolist() == []


def test_a_readers_edge_cache_gathers_runs_by_name_and_keeps_the_first_of_two_adds():
    edges = EdgeCache()
    assert edges.unknown(np.array([4, 2, 4])).tolist() == [4, 2]
    # name 4: two edges (to 7 and 8), mentioned by 3 passages; name 2: one synonym edge;
    # each target's strength over every edge, learnt by name (9: the store keeps none; 6: never learnt)
    edges.add(np.array([4, 2]), np.array([2, 1]), np.array([7, 8, 9]), np.array([1.0, 0.5, 0.25]),
              np.array([0, 1, 2], dtype=np.int8), np.array([3, 0]))
    edges.learn(np.array([7, 8, 9]), np.array([5.0, 6.0, np.nan]))
    # a second recall read 2 again with 5 as well: 2 keeps what was added first
    edges.add(np.array([2, 5]), np.array([1, 2]), np.array([6, 1, 3]), np.array([9.0, 2.0, 2.0]),
              np.array([2, 0, 0], dtype=np.int8), np.array([0, 1]))
    edges.learn(np.array([1, 3]), np.array([8.0, 9.0]))
    assert edges.learned(np.array([9, 6, 1, 40])).tolist() == [True, False, True, False]
    assert len(edges) == 3 and edges.unknown(np.array([5, 4, 6])).tolist() == [6]
    lengths, targets, weights, kinds, totals, strength, passages = edges.gather(np.array([2, 5, 4]))
    assert lengths.tolist() == [1, 2, 2] and targets.tolist() == [9, 1, 3, 7, 8]
    assert weights.tolist() == [0.25, 2.0, 2.0, 1.0, 0.5] and kinds.tolist() == [2, 0, 0, 0, 1]
    np.testing.assert_array_equal(totals, [np.nan, 8.0, 9.0, 5.0, 6.0])
    assert strength.tolist() == [0.25, 4.0, 1.5] and passages.tolist() == [0, 1, 3]
    assert edges.passage_counts(np.array([4, 6, 5, 99])).tolist() == [3, -1, 1, -1]  # -1: never fetched


def test_a_read_started_ahead_is_taken_once_with_its_answer_or_its_error():
    import threading

    from hippo.memory.ahead import Ahead

    ahead, ran, release = Ahead(), [], threading.Event()

    def read(x: int) -> int:
        release.wait(5)
        ran.append((threading.current_thread().name, x))
        return x * 2

    def fails() -> None:
        raise StoreError("Neo4j went away")

    ahead.start("a", read, 1)
    ahead.start("b", fails)
    assert len(ahead) == 2
    release.set()
    assert ahead.take("a", read, 99) == 2  # the answer of the read started, not a new one
    with pytest.raises(StoreError, match="went away"):
        ahead.take("b", read, 0)
    assert ahead.take("a", read, 3) == 6  # taken once: asked again, it runs here
    assert [x for _, x in ran] == [1, 3] and ran[0][0].startswith("hippo-read-ahead")
    assert ran[1][0] == threading.current_thread().name and len(ahead) == 0


def test_a_frontier_read_names_only_the_targets_the_cache_does_not_know():
    """Targets come by node id: bound ones with a learnt strength are taken as they are, each other
    one is looked up once (one round trip) and then bound, with its strength learnt first."""
    from hippo.memory.store_names import named_edges
    from hippo.store.neo4j.frontier import Frontier

    names, cache = Names(), EdgeCache()
    owners = names.of(["p1", "e1"], np.array([True, False]))
    names.bind(np.array([101]), owners[1:])
    cache.learn(owners[1:], np.array([4.0]))
    asked: list[list[int]] = []

    def keyed(keys: list[int], *, mention_weight: float, relation_weight: float) -> dict[int, tuple[str, float | None]]:
        assert (mention_weight, relation_weight) == (1.0, 2.0)  # the strengths are summed with the walk's weights
        asked.append(keys)
        return {102: ("e2", 7.0), 201: ("p2", None), 103: ("e3", 2.5)}

    p1, e1 = owners.tolist()
    # the read's answer: e1 first (the owners need not come back in the order asked), then p1
    found = Frontier.of([[e1, 0, 1, 2, 1, 201, 102, 102, 103, 0.75], [p1, 2, 0, 0, 0, 101, 102]])
    lengths, targets, weights, kinds, passages = named_edges(names, cache, owners, found, keyed, 1.0, 2.0)
    assert asked == [[102, 201, 103]]  # each unknown one once, in the order met
    assert lengths.tolist() == [2, 4] and passages.tolist() == [0, 1]
    assert [names.ids[t] for t in targets.tolist()] == ["e1", "e2", "p2", "e2", "e2", "e3"]
    assert weights.tolist() == [1.0, 1.0, 1.0, 2.0, 2.0, 0.75] and kinds.tolist() == [1, 1, 1, 0, 0, 2]
    assert names.passage[targets].tolist() == [False, False, True, False, False, False]
    np.testing.assert_array_equal(cache.totals(targets), [4.0, 7.0, np.nan, 7.0, 7.0, 2.5])
    named_edges(names, cache, owners, found, keyed, 1.0, 2.0)
    assert len(asked) == 1  # all bound and learnt now: nothing more to ask
    with pytest.raises(StoreError, match="gone from the store"):
        named_edges(names, cache, owners, Frontier.of([[p1, 1, 0, 0, 0, 999]]), keyed, 1.0, 2.0)
