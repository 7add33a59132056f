"""The derived indexes' storage: string tables and the way back from a string to its position."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from hippo import columns
from hippo.columns import StringIds, StringIndex, StringTable


def _ids(n: int, start: int = 0) -> list[str]:
    return [f"entity:{i:x}·é" if i % 7 == 0 else f"passage:{i * 2654435761 % 2**40:x}" for i in range(start, n)]


def _check_against_a_dict(index: StringIndex, want: dict[str, int]) -> None:
    assert len(index) == len(want) and list(index) == list(want)
    for key, position in want.items():
        assert key in index and index[key] == position and index.get(key) == position
    for absent in ("entity:nope", "", "passage:", _ids(3)[1] + "x"):
        assert absent not in index and index.get(absent) is None and index.get(absent, -1) == -1
        with pytest.raises(KeyError):
            index[absent]
    assert 5 not in index  # not a string: not held, not an error


def test_a_string_index_answers_as_a_dict_would_for_loaded_and_added_strings():
    table = StringTable()
    table.append(_ids(5_000))
    index = StringIndex(table)
    _check_against_a_dict(index, {s: i for i, s in enumerate(_ids(5_000))})
    table.append(_ids(5_100, 5_000))  # added after the index was made: a projection's new vertices
    for i, s in enumerate(_ids(5_100, 5_000)):
        index[s] = 5_000 + i
    want = {s: i for i, s in enumerate(_ids(5_100))}
    _check_against_a_dict(index, want)
    assert index.found(["entity:0·é", _ids(5_100)[77], "missing"]) == {"entity:0·é": 0, _ids(5_100)[77]: 77}
    again = StringIndex(StringTable(*table.arrays()))  # as a saved projection is loaded
    _check_against_a_dict(again, want)


def test_strings_whose_hashes_collide_each_find_their_own_position(monkeypatch):
    monkeypatch.setattr(columns, "hash", lambda s: len(s) % 3, raising=False)  # three hashes for all
    table = StringTable()
    table.append(_ids(300))
    index = StringIndex(table)
    _check_against_a_dict(index, {s: i for i, s in enumerate(_ids(300))})


def test_a_string_index_holds_a_fraction_of_what_a_dict_did():
    table = StringTable()
    table.append(_ids(200_000))
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        index = StringIndex(table)
        held_by_index = tracemalloc.get_traced_memory()[0] - before
        strings = table.to_list()
        before = tracemalloc.get_traced_memory()[0]
        as_dict = {s: i for i, s in enumerate(strings)}
        held_by_dict = tracemalloc.get_traced_memory()[0] - before  # the dict alone, not its strings
    finally:
        tracemalloc.stop()
    assert len(index) == len(as_dict) == 200_000
    assert held_by_index < 0.5 * held_by_dict  # 12 B a string here (2.4 MB) against ~5.2 MB (+ the strings: ~16 MB)


def test_positions_answer_many_keys_at_once_as_get_does_one(monkeypatch):
    table = StringTable()
    table.append(_ids(2_000))
    index = StringIndex(table)
    index["added·1"] = 2_000
    keys = [*_ids(2_000)[::97], "added·1", "absent", "", _ids(2_000)[5]]
    assert index.positions(keys).tolist() == [index.get(k, -1) for k in keys]
    assert index.positions([]).tolist() == [] and StringIndex(StringTable()).positions(["a"]).tolist() == [-1]
    monkeypatch.setattr(columns, "hash", lambda s: len(s) % 2, raising=False)  # every key collides
    colliding = StringIndex(table)
    assert colliding.positions(keys[:-4]).tolist() == list(range(0, 2_000, 97))


def test_string_ids_number_strings_in_the_order_first_added_and_read_back_from_lines():
    words = StringIds()
    assert words.ids(["b", "a", "b", "é"], add=True).tolist() == [0, 1, 0, 2]
    assert words.ids(["a", "new"]).tolist() == [1, -1] and len(words) == 3  # asked, not added
    assert words.ids(["new", "a"], add=True).tolist() == [3, 1]
    lines = words.lines()
    assert bytes(lines) == "b\na\né\nnew".encode()
    again = StringIds.from_lines(lines)
    assert again.table.to_list() == ["b", "a", "é", "new"] and again["é"] == 2 and "zz" not in again
    assert again.ids(["zz", "new"], add=True).tolist() == [4, 3] and again.table[4] == "zz"
    empty = StringIds.from_lines(np.zeros(0, dtype=np.uint8))
    assert len(empty) == 0 and len(empty.lines()) == 0
