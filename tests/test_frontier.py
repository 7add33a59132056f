"""A frontier read's answer as arrays (``hippo.store.neo4j.frontier``): parsed, aligned to the owners
asked, and refused when it does not have the statement's shape."""

from __future__ import annotations

import numpy as np
import pytest

from hippo.errors import StoreError
from hippo.runs import ranges
from hippo.store.neo4j.frontier import EMPTY, Frontier, Owners


def test_ranges_are_each_start_counted_out_in_turn():
    assert ranges(np.array([5, 0, 9]), np.array([2, 0, 3])).tolist() == [5, 6, 9, 10, 11]
    assert ranges(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)).tolist() == []


def test_flat_rows_parse_into_counts_targets_and_scores():
    big = 2**52 + 1  # a node id past float32 and int32, still exact through one float64 pass
    found = Frontier.of([[7, 2, 0, 0, 0, 11, big], [3, 0, 1, 2, 2, 21, 31, 32, 41, 42, 0.5, 0.25]])
    assert found.keys.tolist() == [7, 3]
    assert found.counts.tolist() == [[2, 0, 0, 0], [0, 1, 2, 2]]
    assert found.targets.tolist() == [11, big, 21, 31, 32, 41, 42]
    assert found.scores.tolist() == [0.5, 0.25]
    assert found.by_owner() == {7: ((2, 0, 0, 0), (11, big), ()), 3: ((0, 1, 2, 2), (21, 31, 32, 41, 42), (0.5, 0.25))}


def test_aligned_puts_owners_in_the_order_asked_and_gives_the_unfound_none():
    found = Frontier.of([[7, 2, 0, 0, 0, 11, 12], [3, 0, 1, 0, 1, 21, 41, 0.5]])
    aligned = found.aligned(np.array([3, 5, 7]))
    assert aligned.keys.tolist() == [3, 5, 7]
    assert aligned.counts.tolist() == [[0, 1, 0, 1], [0, 0, 0, 0], [2, 0, 0, 0]]
    assert aligned.targets.tolist() == [21, 41, 11, 12] and aligned.scores.tolist() == [0.5]
    assert aligned.by_owner() == {**found.by_owner(), 5: ((0, 0, 0, 0), (), ())}
    nothing = EMPTY.aligned(np.array([4, 2]))
    assert nothing.counts.tolist() == [[0, 0, 0, 0]] * 2 and not len(nothing.targets)
    assert Frontier.of([]).by_owner() == {}


def test_an_answer_of_another_shape_or_for_an_owner_not_asked_is_refused():
    with pytest.raises(StoreError, match="shape"):
        Frontier.of([[7, 2, 0, 0, 0, 11]])  # two targets said, one given
    with pytest.raises(StoreError, match="shape"):
        Frontier.of([[7, 0, 0, 0, 1, 11]])  # a synonym without its score
    with pytest.raises(StoreError, match="shape"):
        Frontier.of([[7, 0, 0], [8, 0, 0, 0, 0]])  # no room for the counts
    with pytest.raises(StoreError, match="not asked"):
        Frontier.of([[9, 1, 0, 0, 0, 11]]).aligned(np.array([3, 7]))
    with pytest.raises(StoreError, match="not asked"):
        Frontier.of([[9, 1, 0, 0, 0, 11]]).aligned(np.array([3, 7, 10]))


def test_owners_go_as_flat_lists_split_by_how_they_are_found():
    """A frontier's owners as ``read_neighbours.cypher`` takes them: by record id where no node id is
    known, else by node id, each list with its keys beside it; a read in parts takes every n-th owner."""
    owners = Owners.of([4, 9, 2, 7], ["p-a", "p-b", "p-c", "p-d"], [-1, 130, -1, 5])
    assert len(owners) == 4
    assert owners.params("passage") == {"passage_ids": ["p-a", "p-c"], "passage_id_keys": [4, 2],
                                        "passage_nodes": [130, 5], "passage_node_keys": [9, 7]}
    second = owners.every(1, 2)
    assert second.keys.tolist() == [9, 7] and second.records.tolist() == ["p-b", "p-d"]
    assert Owners.of([], [], []).params("entity") == {"entity_ids": [], "entity_id_keys": [], "entity_nodes": [],
                                                      "entity_node_keys": []}
    assert all(type(v) is int for v in owners.params("passage")["passage_nodes"])  # packable, not numpy's
