"""A map from non-negative 64-bit integers to integers, read and written a whole array at a time.

Store-side recalls bind every target a frontier read names (a Neo4j node id) to a small integer
(``hippo.memory.store_names.Names``): ~16k lookups a recall at 100k passages. A ``dict`` spends
~0.6 µs a lookup there (a hash-table miss per key from Python); this table, open addressing with
linear probing in numpy arrays, answers a batch in a few vectorised passes.
"""

from __future__ import annotations

import numpy as np

EMPTY = -1  # no key: keys are non-negative
GOLDEN = np.uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing: spreads consecutive ids over the table
MIN_SLOTS = 1024


class IntMap:
    """``key -> value`` for int64 keys ≥ 0. Kept at most half full, so a probe run stays short.

    Reads take no lock: a table is swapped whole when it grows, and within a table a slot's value is
    written before its key, so a read that races a write sees the key bound or not, never half."""

    def __init__(self) -> None:
        self._table = _empty(MIN_SLOTS)
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def get(self, keys: np.ndarray, default: int = -1) -> np.ndarray:
        """The value of each key, ``default`` for a key not in the map."""
        table_keys, values = self._table
        keys = np.asarray(keys, dtype=np.int64)
        found = np.full(len(keys), default, dtype=np.int64)
        pending, slot = np.arange(len(keys)), _slots(keys, len(table_keys))
        while len(pending):
            held = table_keys[slot]
            hit = held == keys[pending]
            found[pending[hit]] = values[slot[hit]]
            going = ~hit & (held != EMPTY)
            pending, slot = pending[going], (slot[going] + 1) & (len(table_keys) - 1)
        return found

    def put(self, keys: np.ndarray, values: np.ndarray) -> None:
        """Bind each key to its value (a key already bound takes the new one; of a key given twice,
        the last). Not safe against another ``put`` at the same time: callers hold a lock."""
        keys, values = np.asarray(keys, dtype=np.int64), np.asarray(values, dtype=np.int64)
        if len(keys) and int(keys.min()) < 0:
            raise ValueError("IntMap keys are non-negative")
        last = len(keys) - 1 - np.unique(keys[::-1], return_index=True)[1]  # each key once, its last value
        keys, values = keys[last], values[last]
        if 2 * (self._size + len(keys)) > len(self._table[0]):
            slots = 1 << int(2 * (self._size + len(keys)) - 1).bit_length()
            old_keys, old_values = self._table
            held = old_keys != EMPTY
            grown = _empty(slots)
            _insert(grown, old_keys[held], old_values[held])
            self._table = grown  # swapped whole: a read holds the old table or this one
        self._size += _insert(self._table, keys, values)


def _empty(slots: int) -> tuple[np.ndarray, np.ndarray]:
    return np.full(slots, EMPTY, dtype=np.int64), np.zeros(slots, dtype=np.int64)


def _insert(table: tuple[np.ndarray, np.ndarray], keys: np.ndarray, values: np.ndarray) -> int:
    """Bind distinct ``keys`` in ``table`` (room assured by the caller); how many were new."""
    table_keys, table_values = table
    mask = len(table_keys) - 1
    added = 0
    pending, slot = np.arange(len(keys)), _slots(keys, len(table_keys))
    while len(pending):
        held = table_keys[slot]
        same = held == keys[pending]
        table_values[slot[same]] = values[pending[same]]
        free = held == EMPTY
        # Of the keys reaching one free slot together, the first takes it; the others probe on.
        _, first = np.unique(slot[free], return_index=True)
        taking = np.flatnonzero(free)[first]
        table_values[slot[taking]] = values[pending[taking]]  # the value before the key (a racing read)
        table_keys[slot[taking]] = keys[pending[taking]]
        added += len(taking)
        going = np.ones(len(pending), dtype=bool)
        going[same] = False
        going[taking] = False
        # A key that lost a free slot tries the same slot again: it is taken now, so it moves on.
        slot = np.where(going & ~free, (slot + 1) & mask, slot)
        pending, slot = pending[going], slot[going]
    return added


def _slots(keys: np.ndarray, slots: int) -> np.ndarray:
    bits = slots.bit_length() - 1
    return ((keys.astype(np.uint64) * GOLDEN) >> np.uint64(64 - bits)).astype(np.int64)
