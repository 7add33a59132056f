"""``hippo.int_map.IntMap``: integer keys to integers, a batch at a time, against a ``dict``."""

import threading

import numpy as np
import pytest

from hippo.int_map import IntMap


def test_it_answers_as_a_dict_would_through_growth_overwrites_and_repeats():
    rng = np.random.default_rng(3)
    table, expected = IntMap(), {}
    for _ in range(60):
        keys = rng.integers(0, 200_000, int(rng.integers(0, 5000)))  # repeats within a batch and across
        values = rng.integers(0, 1 << 40, len(keys))
        table.put(keys, values)
        expected.update(zip(keys.tolist(), values.tolist()))  # the last value of a repeated key wins
        asked = np.concatenate([keys[:50], rng.integers(0, 400_000, 500)])
        assert table.get(asked).tolist() == [expected.get(k, -1) for k in asked.tolist()]
    assert len(table) == len(expected) > 50_000  # grew well past its first 1,024 slots
    assert table.get(np.array([], dtype=np.int64)).tolist() == []
    assert table.get(np.array([2**62]), default=-7).tolist() == [-7]


def test_keys_that_collide_in_one_slot_all_find_their_own_value():
    table = IntMap()
    slots = len(table._table[0])
    keys = np.arange(0, 300 * slots, slots, dtype=np.int64)  # many keys, few distinct hashes' low bits
    table.put(keys, keys * 3)
    assert table.get(keys).tolist() == (keys * 3).tolist()


def test_a_negative_key_is_refused_and_changes_nothing():
    table = IntMap()
    table.put(np.array([5]), np.array([1]))
    with pytest.raises(ValueError, match="non-negative"):
        table.put(np.array([6, -1]), np.array([2, 3]))
    assert len(table) == 1 and table.get(np.array([5, 6])).tolist() == [1, -1]


def test_a_read_racing_writes_sees_each_key_bound_or_not_never_a_wrong_value():
    table, stop, wrong = IntMap(), threading.Event(), []
    keys = np.arange(100_000, dtype=np.int64)

    def read() -> None:
        while not stop.is_set():
            found = table.get(keys)
            seen = found >= 0
            if not np.array_equal(found[seen], 2 * keys[seen]):
                wrong.append(found)

    reader = threading.Thread(target=read)
    reader.start()
    for batch in np.array_split(keys, 200):
        table.put(batch, 2 * batch)
    stop.set()
    reader.join()
    assert not wrong and table.get(keys).tolist() == (2 * keys).tolist()
