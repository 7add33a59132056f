"""Embedding on the write path: bounded in time, finished in the background.

``remember`` must return within a bounded time even when the encoder is slow
or failing; the memory is written anyway (keyword search and the graph see
it), and the vectors follow later. Timing out cannot interrupt a running
encode, so one worker thread runs them in order: a slow encode delays later
ones, which then time out too instead of piling up threads.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np

log = logging.getLogger("hippo.embedding")


class EmbeddingTimeout(TimeoutError):
    pass


class BoundedEncoder:
    """``encode`` with a deadline per call."""

    def __init__(self, encode: Callable[[list[str]], np.ndarray], timeout: float) -> None:
        self._encode = encode
        self.timeout = timeout
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hippo-embed")

    def __call__(self, texts: list[str]) -> np.ndarray:
        future = self._pool.submit(self._encode, texts)
        try:
            return future.result(timeout=self.timeout)
        except TimeoutError:
            raise EmbeddingTimeout(f"embedding {len(texts)} texts took over {self.timeout:g} s") from None

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


class BackgroundEmbedder:
    """A daemon thread that runs ``work`` when woken, retrying with backoff until it reports done.

    ``work`` returns True when nothing is left to embed.
    """

    def __init__(self, work: Callable[[], bool], *, first_retry: float = 0.5, max_retry: float = 60.0) -> None:
        self._work = work
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._first_retry, self._max_retry = first_retry, max_retry
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self.idle = threading.Event()
        self.idle.set()

    def wake(self) -> None:
        with self._start_lock:
            if self._stop.is_set():
                return
            self.idle.clear()
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="hippo-reembed", daemon=True)
                self._thread.start()
        self._wake.set()

    def _run(self) -> None:
        delay = self._first_retry
        while not self._stop.is_set():
            self._wake.wait()
            self._wake.clear()
            if self._stop.is_set():
                break
            try:
                done = self._work()
            except Exception:  # the encoder or the store failed: try again later
                log.warning("background embedding failed; retrying in %.1f s", delay, exc_info=True)
                done = False
            if done:
                delay = self._first_retry
                if not self._wake.is_set():
                    self.idle.set()
                continue
            self._stop.wait(delay)
            delay = min(delay * 2, self._max_retry)
            self._wake.set()

    def close(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
