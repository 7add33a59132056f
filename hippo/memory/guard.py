"""Readers share the derived state; a write that updates it in place excludes them.

The derived indexes (graph projection, vector and keyword indexes) grow in
place after each write, because copying them per write would cost more than
the write. A reader in the middle of a recall must never see half of an
update, and readers must not wait for each other or for the slow part of a
write (extraction, embedding, the store transaction): only the in-place
update itself is exclusive.

Read sections are re-entrant per thread (a recall that calls retrieve), and
a waiting writer goes before new readers so a stream of reads cannot starve
it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class StateGuard:
    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._readers = 0
        self._writing = False
        self._writers_waiting = 0
        self._local = threading.local()

    @property
    def reading(self) -> bool:
        """Whether this thread is inside a read section."""
        return getattr(self._local, "depth", 0) > 0

    @contextmanager
    def read(self) -> Iterator[None]:
        depth = getattr(self._local, "depth", 0)
        if depth == 0:
            with self._cond:
                while self._writing or self._writers_waiting:
                    self._cond.wait()
                self._readers += 1
        self._local.depth = depth + 1
        try:
            yield
        finally:
            self._local.depth = depth
            if depth == 0:
                with self._cond:
                    self._readers -= 1
                    if not self._readers:
                        self._cond.notify_all()

    @contextmanager
    def write(self) -> Iterator[None]:
        if self.reading:
            raise RuntimeError("a read section cannot update the derived state (it would wait for itself)")
        with self._cond:
            self._writers_waiting += 1
            try:
                while self._writing or self._readers:
                    self._cond.wait()
            finally:
                self._writers_waiting -= 1
            self._writing = True
        try:
            yield
        finally:
            with self._cond:
                self._writing = False
                self._cond.notify_all()
