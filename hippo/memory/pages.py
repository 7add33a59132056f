"""Pages of the saved derived state: mapped for random reads, and read once in the background on open.

A search touches a few scattered rows of the vector files and a few hundred nodes
of an HNSW graph, so both are mapped, not loaded: opening reads none of them and
they are clean page cache the kernel may drop, not the process's own memory. What
a mapping costs instead is the first touch of each page: a recall in a fresh
process over a cold 100k-passage store spent ~60 ms of its seeds stage faulting
them in one by one. ``read_ahead`` reads the files through once, sequentially, on
a background thread (this machine's disk: ~2 GB/s that way, ~0.1 ms a random
page), so the cache is warm a second or two after opening while recalls go on.
``posix_fadvise(WILLNEED)`` was tried first and left the cache cold here.
"""

from __future__ import annotations

import mmap
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

CHUNK = 1 << 22


def mapped_rows(path: Path, dtype: str, shape: tuple[int, int]) -> np.ndarray:
    """Rows of a saved vector file, memory-mapped read-only for random access: searches read a few
    scattered rows, and the kernel's read-ahead (8 MB a fault on this machine's disk) made 160
    random rows of a cold 1M-row file take 2.9 s instead of 27 ms."""
    with path.open("rb") as f:
        size = int(np.prod(shape)) * np.dtype(dtype).itemsize
        if not size:
            return np.zeros(shape, dtype=dtype)
        mapping = mmap.mmap(f.fileno(), size, access=mmap.ACCESS_READ)
    if hasattr(mmap, "MADV_RANDOM"):  # Linux and most Unixes
        mapping.madvise(mmap.MADV_RANDOM)
    return np.frombuffer(mapping, dtype=dtype, count=int(np.prod(shape))).reshape(shape)


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

    thread = threading.Thread(target=run, name="hippo-read-ahead", daemon=True)
    thread.start()
    return thread
