"""Append-only typed columns: the storage of the derived indexes.

The in-process graph and vector indexes grow by appends (one write batch at a
time) and are read by position. A ``Column`` is a numpy array with spare
capacity, so an append copies only when the capacity doubles; a
``StringTable`` keeps many short strings (record ids) as one UTF-8 blob and
offsets instead of one Python object each (10M fact ids: 330 MB instead of
830 MB). Both hand out their contents as plain arrays for saving.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

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
        i = int(i)
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        start, end = self._offsets.values[i], self._offsets.values[i + 1]
        return self._blob.values[start:end].tobytes().decode("utf-8")

    def take(self, rows: Iterable[int]) -> list[str]:
        return [self[int(r)] for r in rows]

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
        blob = self._blob.values.tobytes()
        offsets = self._offsets.values.tolist()
        return [blob[a:b].decode("utf-8") for a, b in zip(offsets, offsets[1:], strict=False)]
