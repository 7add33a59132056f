"""A frontier read's answer (``read_neighbours.cypher``) as arrays.

The statement answers one record holding one flat list per owner read:
``[key, e, p, r, s, <e + p + r + s target node ids>, <s synonym scores>]``, where ``key`` is the
caller's integer for the owner (sent with it and echoed), ``e`` the entities a passage mentions, ``p``
the passages mentioning an entity, ``r`` the other ends of its facts and ``s`` its synonyms. The driver
builds one Python list per list it decodes: the reads decode in ~0.6 of the client CPU they took as
five nested lists an owner (stop 52's shape; 100k passages, ~1,400 owners a recall: 9.4 -> 5.4 ms a
recall, ``results/frontier_reads-stop53.md``), and numbers alone turn into arrays in one pass.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from hippo.errors import StoreError
from hippo.runs import ranges

HEADER = 5  # key and the four counts


@dataclass(frozen=True)
class Owners:
    """Frontier nodes of one kind as a read asks for them, as arrays: a read sends them as flat lists
    of numbers (a pair per owner cost the client a Python list each to build, format and pack)."""

    keys: np.ndarray  # int64: the caller's integer for each, echoed with its edges
    records: np.ndarray  # object: its record id (the property index finds it where ``nodes`` is -1)
    nodes: np.ndarray  # int64: its node id where the caller knows it (found without an index seek), else -1

    @classmethod
    def of(cls, keys: Sequence[int], records: Sequence[str], nodes: Sequence[int]) -> Owners:
        return cls(np.asarray(keys, dtype=np.int64), np.array(records, dtype=object).reshape(-1),
                   np.asarray(nodes, dtype=np.int64))

    def __len__(self) -> int:
        return len(self.keys)

    def every(self, start: int, step: int) -> Owners:
        """Every ``step``-th owner from ``start``: a read split into parts."""
        return Owners(self.keys[start::step], self.records[start::step], self.nodes[start::step])

    def params(self, kind: str) -> dict[str, list[Any]]:
        """As ``read_neighbours.cypher`` takes them: ``<kind>_ids`` with ``<kind>_id_keys``,
        ``<kind>_nodes`` with ``<kind>_node_keys``."""
        by_id = self.nodes < 0
        return {f"{kind}_ids": self.records[by_id].tolist(), f"{kind}_id_keys": self.keys[by_id].tolist(),
                f"{kind}_nodes": self.nodes[~by_id].tolist(), f"{kind}_node_keys": self.keys[~by_id].tolist()}


class Frontier(NamedTuple):
    """The visible edges of the owners a read found, owner by owner."""

    keys: np.ndarray  # int64: each owner's key
    counts: np.ndarray  # int64 (owners, 4): entities mentioned, passages mentioning, relations, synonyms
    targets: np.ndarray  # int64 node ids: each owner's, by kind in that order
    scores: np.ndarray  # float64: the synonyms' scores, in order

    @classmethod
    def of(cls, rows: Sequence[Sequence[float]]) -> Frontier:
        """From the statement's flat lists. Node ids and keys are below 2**53, so one float64 pass holds
        them exactly."""
        lengths = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
        flat = np.fromiter(itertools.chain.from_iterable(rows), dtype=np.float64, count=int(lengths.sum()))
        starts = np.cumsum(lengths) - lengths
        if (lengths < HEADER).any():
            raise _misshapen()
        counts = flat[starts[:, None] + np.arange(1, HEADER)].astype(np.int64).reshape(-1, 4)
        width = counts.sum(axis=1)
        if not np.array_equal(lengths, HEADER + width + counts[:, 3]):
            raise _misshapen()
        return cls(keys=flat[starts].astype(np.int64), counts=counts,
                   targets=flat[ranges(starts + HEADER, width)].astype(np.int64),
                   scores=flat[ranges(starts + HEADER + width, counts[:, 3])])

    def aligned(self, keys: np.ndarray) -> Frontier:
        """The same edges for the owners ``keys``, in that order: an owner the read did not find (not
        visible to the reader) has none."""
        keys = np.asarray(keys, dtype=np.int64)
        order = np.argsort(keys, kind="stable")
        at = np.searchsorted(keys, self.keys, sorter=order)
        if len(self.keys) and (at.max() >= len(keys) or not np.array_equal(keys[order[at]], self.keys)):
            raise StoreError("a frontier read answered for an owner it was not asked for")
        where = order[at]  # each found owner's place among ``keys``
        counts = np.zeros((len(keys), 4), dtype=np.int64)
        counts[where] = self.counts
        width, synonyms = self.counts.sum(axis=1), self.counts[:, 3]
        back = np.argsort(where)  # found owners in ``keys`` order
        return Frontier(keys=keys, counts=counts,
                        targets=self.targets[ranges((np.cumsum(width) - width)[back], width[back])],
                        scores=self.scores[ranges((np.cumsum(synonyms) - synonyms)[back], synonyms[back])])

    def by_owner(self) -> dict[int, tuple[tuple[int, ...], tuple[int, ...], tuple[float, ...]]]:
        """key -> (counts, targets, synonym scores): a plain value to compare two reads by."""
        width, synonyms = self.counts.sum(axis=1), self.counts[:, 3]
        t_end, s_end = np.cumsum(width), np.cumsum(synonyms)
        return {int(k): (tuple(c.tolist()), tuple(self.targets[te - w:te].tolist()),
                         tuple(self.scores[se - s:se].tolist()))
                for k, c, w, te, s, se in zip(self.keys, self.counts, width, t_end, synonyms, s_end, strict=True)}


def _misshapen() -> StoreError:
    return StoreError("a frontier read's answer does not have the shape read_neighbours.cypher gives")


EMPTY = Frontier(keys=np.zeros(0, dtype=np.int64), counts=np.zeros((0, 4), dtype=np.int64),
                 targets=np.zeros(0, dtype=np.int64), scores=np.zeros(0, dtype=np.float64))
