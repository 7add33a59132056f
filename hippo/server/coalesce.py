"""An embedder that encodes concurrent small requests as one batch.

Concurrent recalls each embed a query and its phrases: a handful of short
texts. Encoded one request at a time (the model takes one caller at once),
each pays the model's fixed per-call cost; encoded together they share it.
No background thread and no added wait: the first caller to find the model
free encodes everything queued so far, and whoever queued meanwhile is
served by the next round. A lone caller sees no difference.

Opt-in (``HIPPO_SERVER_COALESCE_EMBEDDINGS=true``): on 2 shared cores at 10k
passages it served 5.0 recalls/s with 8 clients against 8.3 embedding one
query at a time (``benchmarks/serve_load.py``): while the batch encodes,
every recall in it waits, where one-at-a-time lets the others run their seed
and PPR stages. It may pay where embedding dominates (a GPU, a larger model).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import numpy as np

from hippo.embed import Embedder, backend_of


@dataclass
class _Request:
    texts: list[str]
    vectors: np.ndarray | None = None
    error: BaseException | None = None
    done: bool = False


@dataclass
class CoalescingEmbedder:
    inner: Embedder
    max_texts: int = 256  # larger requests (indexing batches) go straight through
    _pending: list[_Request] = field(default_factory=list, repr=False)
    _busy: bool = field(default=False, repr=False)
    _cond: threading.Condition = field(default_factory=threading.Condition, repr=False)
    batches: int = 0
    requests: int = 0

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dim(self) -> int:
        return self.inner.dim

    @property
    def backend(self) -> str:
        return backend_of(self.inner)

    def encode(self, texts: list[str]) -> np.ndarray:
        if not texts or len(texts) > self.max_texts:
            return self.inner.encode(texts)
        request = _Request(list(texts))
        with self._cond:
            self._pending.append(request)
            while not request.done:
                if self._busy:
                    self._cond.wait()
                    continue
                self._busy = True
                batch = self._take()
                self._cond.release()
                try:
                    self._encode(batch)
                finally:
                    self._cond.acquire()
                    self._busy = False
                    self._cond.notify_all()
        if request.error is not None:
            raise request.error
        assert request.vectors is not None
        return request.vectors

    def _take(self) -> list[_Request]:
        batch, size = [], 0
        while self._pending and (not batch or size + len(self._pending[0].texts) <= self.max_texts):
            request = self._pending.pop(0)
            batch.append(request)
            size += len(request.texts)
        return batch

    def _encode(self, batch: list[_Request]) -> None:
        try:
            vectors = self.inner.encode([t for r in batch for t in r.texts])
        except BaseException as exc:  # every waiter learns of it, not just the one encoding
            for r in batch:
                r.error, r.done = exc, True
            return
        start = 0
        for r in batch:
            r.vectors, start = vectors[start : start + len(r.texts)], start + len(r.texts)
            r.done = True
        self.batches += 1
        self.requests += len(batch)
