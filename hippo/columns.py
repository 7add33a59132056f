"""Append-only typed columns: the storage of the derived indexes.

The in-process graph and vector indexes grow by appends (one write batch at a
time) and are read by position. A ``Column`` is a numpy array with spare
capacity, so an append copies only when the capacity doubles; a
``StringTable`` keeps many short strings (record ids) as one UTF-8 blob and
offsets instead of one Python object each (10M fact ids: 330 MB instead of
830 MB), a ``StringIndex`` finds a string's position in one without a
dict entry per string, and ``StringIds`` numbers strings as they come (a
vocabulary, title keys). Columns and tables hand out their contents as plain
arrays for saving.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence

import numpy as np


class Column:
    """A growable 1-D numpy array."""

    def __init__(self, dtype: np.typing.DTypeLike, values: np.ndarray | None = None) -> None:
        self.dtype = np.dtype(dtype)
        if values is None:
            self._data = np.zeros(16, dtype=self.dtype)
            self._size = 0
        else:
            self._data = np.asarray(values, dtype=self.dtype)
            self._size = len(self._data)

    def __len__(self) -> int:
        return self._size

    @property
    def values(self) -> np.ndarray:
        """The filled part, as a view (valid until the next append)."""
        return self._data[: self._size]

    def __getitem__(self, key):  # noqa: ANN001 - whatever numpy indexing takes
        return self.values[key]

    @property
    def buffer(self) -> np.ndarray:
        """The whole allocation, the filled part first: for reads by position that cannot afford
        the view ``values`` makes on every call (entries past ``len`` are spare)."""
        return self._data

    def __setitem__(self, key, value) -> None:  # noqa: ANN001
        self.values[key] = value

    def reserve(self, size: int) -> None:
        if size > len(self._data):
            grown = np.zeros(max(size, 2 * len(self._data)), dtype=self.dtype)
            grown[: self._size] = self._data[: self._size]
            self._data = grown

    def append(self, values: np.ndarray | Sequence | float | int) -> None:
        values = np.atleast_1d(np.asarray(values, dtype=self.dtype))
        self.reserve(self._size + len(values))
        self._data[self._size : self._size + len(values)] = values
        self._size += len(values)

    def truncate(self, size: int) -> None:
        self._size = min(self._size, size)

    def extend_to(self, size: int, fill: float | int | bool = 0) -> None:
        """Grow to ``size`` entries, new ones set to ``fill``."""
        if size > self._size:
            self.reserve(size)
            self._data[self._size : size] = fill
            self._size = size


class StringTable(Sequence[str]):
    """Many short strings in one blob: ``table[i]``, ``table.take(rows)``, ``len(table)``."""

    def __init__(self, blob: np.ndarray | None = None, offsets: np.ndarray | None = None) -> None:
        self._blob = Column(np.uint8, blob)
        self._offsets = Column(np.int64, offsets if offsets is not None else np.zeros(1, dtype=np.int64))

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def __getitem__(self, i):  # noqa: ANN001
        if isinstance(i, slice):
            return self.take(range(*i.indices(len(self))))
        i, n = int(i), len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(i)
        # the columns' buffers, not ``values``: a view made per call was most of a lookup's time
        start, end = self._offsets.buffer[i : i + 2].tolist()
        return self._blob.buffer[start:end].tobytes().decode("utf-8")

    def take(self, rows: Iterable[int]) -> list[str]:
        """``[table[r] for r in rows]``, the offsets gathered at once (a recall names ~100 vertices)."""
        at = np.fromiter(rows, dtype=np.int64) if not isinstance(rows, np.ndarray) else rows.astype(np.int64)
        n = len(self)
        at = np.where(at < 0, at + n, at)
        if at.size and not (0 <= at.min() and at.max() < n):
            raise IndexError(int(at[(at < 0) | (at >= n)][0]))
        offsets, blob = self._offsets.buffer, self._blob.buffer
        return [blob[a:b].tobytes().decode("utf-8")
                for a, b in zip(offsets[at].tolist(), offsets[at + 1].tolist(), strict=True)]

    def append(self, strings: Iterable[str]) -> None:
        encoded = [s.encode("utf-8") for s in strings]
        if not encoded:
            return
        lengths = np.fromiter((len(b) for b in encoded), dtype=np.int64, count=len(encoded))
        self._offsets.append(self._offsets.values[-1] + np.cumsum(lengths))
        self._blob.append(np.frombuffer(b"".join(encoded), dtype=np.uint8))

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """(blob, offsets), for saving."""
        return self._blob.values, self._offsets.values

    def to_list(self) -> list[str]:
        return list(self.strings())

    def strings(self, stop: int | None = None) -> Iterator[str]:
        """The first ``stop`` strings (all by default), decoded one at a time."""
        blob = self._blob.values.tobytes()
        offsets = self._offsets.values[: len(self) + 1 if stop is None else stop + 1].tolist()
        return (blob[a:b].decode("utf-8") for a, b in zip(offsets, offsets[1:], strict=False))


class StringIds:
    """Strings numbered in the order first added (a vocabulary): the strings in a ``StringTable``,
    the way back in a ``StringIndex``, so a few million words hold ~no Python object each."""

    def __init__(self, table: StringTable | None = None) -> None:
        self.table = table if table is not None else StringTable()
        self.index = StringIndex(self.table)

    @classmethod
    def from_lines(cls, blob: np.ndarray) -> StringIds:
        """From strings joined by newlines (which none of them holds), as UTF-8 bytes."""
        blob = np.asarray(blob, dtype=np.uint8)
        if not len(blob):
            return cls()
        newline = blob == 10
        ends = np.flatnonzero(newline)
        # string i ends at its newline, less the i newlines before it once they are taken out
        offsets = np.concatenate([[0], ends - np.arange(len(ends)), [len(blob) - len(ends)]]).astype(np.int64)
        return cls(StringTable(blob[~newline], offsets))

    def lines(self) -> np.ndarray:
        """The strings joined by newlines, as UTF-8 bytes (``from_lines`` reads them back)."""
        blob, offsets = self.table.arrays()
        return np.insert(blob, offsets[1:-1], 10)

    def __len__(self) -> int:
        return len(self.table)

    def __contains__(self, key: object) -> bool:
        return key in self.index

    def __getitem__(self, key: str) -> int:
        return self.index[key]

    def ids(self, keys: Sequence[str], add: bool = False) -> np.ndarray:
        """The number of each of ``keys``; -1 where not held, or (``add``) numbered now, in order."""
        out = self.index.positions(keys)
        if add and (missing := np.flatnonzero(out < 0)).size:
            new: dict[str, int] = {}
            for i in missing.tolist():
                out[i] = new.setdefault(keys[i], len(self.table) + len(new))
            self.table.append(new)
            for key, number in new.items():
                self.index[key] = number
        return out


class StringIndex(Mapping[str, int]):
    """The way back from a ``StringTable``: string -> its position, without a dict entry per string.

    The strings there when the index is made are found by hash: their hashes sorted, with the
    position of each, a match confirmed against the table (~12 B a string; a dict of str -> int held
    ~140 B a record id: ~480 MB for the ~3.4M vertices of 1M passages). Strings added after go to a
    dict. ``hash`` is the interpreter's, computed in this process and never saved.
    """

    def __init__(self, table: StringTable) -> None:
        self._table = table
        n = len(table)
        hashes = np.fromiter((hash(s) for s in table.strings(n)), dtype=np.int64, count=n)
        self._order = np.argsort(hashes, kind="stable").astype(np.int32 if n < 2**31 else np.int64)
        self._hashes = hashes[self._order]
        self._added: dict[str, int] = {}

    def get(self, key: str, default: int | None = None) -> int | None:  # type: ignore[override]
        found = self._added.get(key)
        if found is not None:
            return found
        h = hash(key)
        position = self._confirmed(key, h, int(np.searchsorted(self._hashes, h)))
        return default if position < 0 else position

    def _confirmed(self, key: str, h: int, i: int) -> int:
        """The position of ``key`` among the indexed strings whose hash is ``h``, the first of them
        at ``i`` of the sorted hashes (-1: none is ``key``): a hash collision is told apart by the table."""
        while i < len(self._hashes) and self._hashes[i] == h:
            position = int(self._order[i])
            if self._table[position] == key:
                return position
            i += 1
        return -1

    def positions(self, keys: Sequence[str]) -> np.ndarray:
        """The position of each of ``keys`` (-1 where not held), hashes searched at once: for the many
        short lookups of a query's words or title phrases (~1 us a key against ~3 for ``get``)."""
        out = np.full(len(keys), -1, dtype=np.int64)
        if not len(keys):
            return out
        n = len(self._hashes)
        hashes = np.fromiter((hash(k) for k in keys), dtype=np.int64, count=len(keys))
        at = np.searchsorted(self._hashes, hashes)
        hit = np.flatnonzero(self._hashes[np.minimum(at, n - 1)] == hashes) if n else np.zeros(0, dtype=np.int64)
        for i in hit.tolist():
            out[i] = self._confirmed(keys[i], int(hashes[i]), int(at[i]))
        if self._added:
            for i, key in enumerate(keys):
                if (added := self._added.get(key)) is not None:
                    out[i] = added
        return out

    def found(self, keys: Iterable[str]) -> Mapping[str, int]:
        """The positions of those of ``keys`` held (at least), each looked up once: for a caller
        that asks about the same keys many times. With nothing indexed (a projection being built
        from the store) that is the dict of added strings, and ``keys`` is not even read."""
        if not len(self._hashes):
            return self._added
        return {key: position for key in set(keys) if (position := self.get(key)) is not None}

    def __getitem__(self, key: str) -> int:
        found = self.get(key)
        if found is None:
            raise KeyError(key)
        return found

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.get(key) is not None

    def __setitem__(self, key: str, position: int) -> None:
        self._added[key] = position

    def __len__(self) -> int:
        return len(self._hashes) + len(self._added)

    def __iter__(self) -> Iterator[str]:
        yield from self._table.strings(len(self._hashes))
        yield from self._added
