"""Pages of the saved derived state: graphs mapped, vector rows read by position, and every file
read once in the background on open.

A search touches a few hundred nodes of an HNSW graph and re-ranks a few dozen
rows of a vector file. The graphs are mapped, not loaded (faiss walks them in
place): opening reads none of them and they are clean page cache the kernel may
drop, not the process's own memory. The vector rows are read with ``pread``
instead (``FileRows``): a mapped row brought its whole page-cache folio into the
process with it (one 768-byte row touched per MB of a warm float16 file mapped
175 KB a touch, so after 210 recalls a 100k-passage store held 1.1 GB of vector
pages in its RSS for the ~900 rows a recall reads); a read copies the row and
maps nothing, for ~0.9 us a row against ~0.4 from a mapping. What either costs
first is the page's first read from disk: a recall in a fresh process over a
cold 100k-passage store spent ~60 ms of its seeds stage faulting pages in one by
one. ``read_ahead`` reads the files through once, sequentially, on a background
thread (this machine's disk: ~2 GB/s that way, ~0.1 ms a random page), so the
cache is warm a second or two after opening while recalls go on.
``posix_fadvise(WILLNEED)`` was tried first and left the cache cold here.
"""

from __future__ import annotations

import os
import threading
import weakref
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from hippo.memory.vectors import VectorStore

CHUNK = 1 << 22


class FileRows:
    """The rows of a saved vector file (raw ``dtype`` rows of ``shape[1]``), read by position: indexing
    with an array of row numbers reads those rows (one ``pread`` each, in the order asked), ``np.asarray``
    reads them all. Read-only; the file is opened once and closed with the object (a newer generation may
    replace it meanwhile: the open descriptor still reads the file it opened)."""

    def __init__(self, path: Path, dtype: str, shape: tuple[int, int]) -> None:
        self.path, self.dtype, self.shape = path, np.dtype(dtype), (int(shape[0]), int(shape[1]))
        self._row = self.shape[1] * self.dtype.itemsize
        self._fd = os.open(path, os.O_RDONLY)
        weakref.finalize(self, os.close, self._fd)
        if os.fstat(self._fd).st_size < self.shape[0] * self._row:
            raise ValueError(f"{path} holds fewer than {self.shape[0]} rows of {self._row} bytes")
        if hasattr(os, "posix_fadvise"):  # the kernel's read-ahead suits sequential reads, not scattered rows
            os.posix_fadvise(self._fd, 0, 0, os.POSIX_FADV_RANDOM)

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, rows: np.ndarray) -> np.ndarray:
        rows = np.asarray(rows, dtype=np.int64)
        if len(rows) and (rows.min() < 0 or rows.max() >= self.shape[0]):
            raise IndexError(f"rows outside 0..{self.shape[0] - 1} of {self.path.name}")
        read, fd, size = os.pread, self._fd, self._row
        data = b"".join([read(fd, size, at) for at in (rows * size).tolist()])
        return np.frombuffer(data, dtype=self.dtype).reshape(len(rows), self.shape[1])

    def __array__(self, dtype: np.dtype | None = None, copy: bool | None = None) -> np.ndarray:
        out = np.empty(self.shape, dtype=self.dtype)
        view, done = memoryview(out).cast("B"), 0
        while done < len(view):
            got = os.preadv(self._fd, [view[done : done + CHUNK]], done)
            if not got:
                raise OSError(f"{self.path} ended after {done} bytes")
            done += got
        return out if dtype is None else out.astype(dtype)

    def astype(self, dtype: np.dtype | type) -> np.ndarray:
        return np.asarray(self, dtype=dtype)


def saved_rows(path: Path, dtype: str, shape: tuple[int, int]) -> FileRows | np.ndarray:
    """The rows of a saved vector file (an empty array for no rows)."""
    if not shape[0]:
        return np.zeros(shape, dtype=dtype)
    return FileRows(path, dtype, shape)


def save_rows(directory: Path, kind: str, store: VectorStore, old: dict | None, files: dict, number: int) -> dict:
    """Append the rows a kind's vectors gained since the last snapshot (``old``, its manifest) to their
    shared file, or write a new file when that one cannot be extended (other dtype, or unknown); the
    file's manifest entry goes into ``files``. Returns the kind's entry: file, dtype, rows."""
    dtype = np.dtype(store.dtype).name
    previous = (old or {}).get("vectors", {}).get(kind, {})
    reuse = (previous.get("dtype") == dtype and previous.get("rows", 0) == len(store.saved) > 0
             and previous.get("file") in old.get("files", {}) and (directory / previous["file"]).exists())
    name = previous["file"] if reuse else f"vectors-{kind}-{dtype}-{number}.bin"
    row_bytes = store.dim * np.dtype(store.dtype).itemsize
    if reuse:
        crc, start = old["files"][name]["crc"], previous["rows"]
        blocks = [store.tail]
    else:
        crc, start = 0, 0
        blocks = [np.asarray(store.saved), store.tail]
    with (directory / name).open("r+b" if reuse else "wb") as f:
        f.truncate(start * row_bytes)
        f.seek(start * row_bytes)
        for block in blocks:
            data = np.ascontiguousarray(block, dtype=store.dtype).tobytes()
            f.write(data)
            crc = zlib.crc32(data, crc)
        f.flush()
        os.fsync(f.fileno())
    total = len(store)
    if total:
        files[name] = {"bytes": total * row_bytes, "crc": crc}
    return {"file": name, "dtype": dtype, "rows": total}


READ_AHEAD = "hippo-read-ahead"  # the thread's name (a benchmark waits for it to measure recall warm)


def read_ahead(paths: Sequence[Path]) -> threading.Thread:
    """Read these files once on a daemon thread, so their pages are in the page cache; a file
    gone meanwhile (a newer generation replaced it) is skipped. The thread is returned for tests."""
    def run() -> None:
        buffer = bytearray(CHUNK)
        for path in paths:
            try:
                with open(path, "rb", buffering=0) as f:
                    while f.readinto(buffer):
                        pass
            except OSError:
                continue  # only a warm-up: the reads that matter report their own errors

    thread = threading.Thread(target=run, name=READ_AHEAD, daemon=True)
    thread.start()
    return thread
