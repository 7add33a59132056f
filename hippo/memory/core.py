"""The engine's core: the one owner of the derived state and of the write protocol.

``Engine`` alone holds the writer lock, the state guard (readers vs the
in-place update that follows a write), the derived indexes with their saved
copy, the bounded encoder and the background embedder. Everything that
writes goes through ``Engine.write(plan)``:

    lock -> current view -> plan(view) -> commit -> the plan's result

retried with a jittered backoff (``hippo.memory.retry``) when the store
refuses the write because another process moved a version it was planned on
(``Conflict``). The lock is released between attempts, so this process's
other writers go on while one waits. Readers take ``Engine.reading()``, or
``Engine.state`` for a one-off look.

A plan reads a ``hippo.memory.write_view.WriteView``: the derived state, or in
store-side read mode (``HIPPO_NEO4J_READ=store``) the store itself, so that a
process serving from the store builds no copy of the graph to write either.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import numpy as np

from hippo.config import Settings
from hippo.embed import Embedder
from hippo.errors import Conflict, StoreError
from hippo.memory import reembed
from hippo.memory.delta import Delta
from hippo.memory.embedding import BackgroundEmbedder, BoundedEncoder
from hippo.memory.guard import StateGuard
from hippo.memory.indexing import embed_missing, link_synonyms
from hippo.memory.persist import DerivedCache, load_state
from hippo.memory.retry import WRITE_ATTEMPTS, WRITE_DEADLINE, write_attempts
from hippo.memory.source import LocalSource, RecallSource
from hippo.memory.state import DerivedState
from hippo.memory.store_reads import StoreReads
from hippo.memory.write_view import LocalView, StoreView, WriteView, record_kind
from hippo.models import Entity, Fact, Passage
from hippo.store import Store, WriteBatch
from hippo.store.base import Spaces

T = TypeVar("T")
log = logging.getLogger("hippo.engine")
RELOAD_RETRIES = 3  # derived-state reloads that may fail because other processes kept writing


@dataclass
class Planned(Generic[T]):
    """One attempt's plan: what to write, and what the caller gets once it is written.

    ``result`` runs after the commit, still under the writer lock, with the
    revision the write made (the state's own when ``batch`` is None: nothing
    to write, as in a dry run). ``late``: records stored earlier that only now
    get their vectors (the background embedding).
    """

    batch: WriteBatch | None
    result: Callable[[int], T]
    vectors: dict[str, np.ndarray] = field(default_factory=dict)
    late: list[Passage | Entity | Fact] | None = None


class Engine:
    """The derived state of one store, and the only way to write to it."""

    def __init__(self, store: Store, settings: Settings, embedder: Embedder, *,
                 store_reads: StoreReads | None = None) -> None:
        """``store_reads``: the store-side read mode's reads; with them writes plan on the store, and
        the derived state is built only if something still asks for it (``state``)."""
        self.store, self.settings, self.embedder = store, settings, embedder
        self.store_reads = store_reads
        lazy = store_reads is not None
        self._lock = threading.RLock()  # one writer at a time
        self._guard = StateGuard()
        # store-side reads keep no state to save: a state some read builds there lives as long as the process
        self._cache = None if lazy else DerivedCache.for_store(store, settings, embedder.dim)
        self._state: DerivedState | None = None if lazy else load_state(store, settings, embedder.dim, self._cache)
        if self._state is not None and (older := [f"{kind}/{code} ({len(index.shards[code]):,} rows, "
                                                  f"{index.shards[code].links} links)"
                                                  for kind, index in self._state.vector_indexes()
                                                  for code in index.relinkable()]):
            log.warning("%s: %s linked as hippo no longer links a graph that large (fewer links a node, or one "
                        "graph past vector_graph_rows): `hippo relink "
                        "--store %s` links them again (about an hour a 10M-row graph; writes grow them as they "
                        "are)", store.url, ", ".join(older), store.url)
        self._encoder = BoundedEncoder(embedder.encode, settings.remember_embed_timeout)
        self._background = BackgroundEmbedder(self._embed_pending)
        # Records an earlier process wrote without a vector (its embedding timed out, or it died before
        # the background pass); store-side the store marks them, so this is a read of those alone.
        if (self.view() if lazy else self._state).unembedded:
            self._background.wake()

    def close(self) -> None:
        self._background.close()
        self._encoder.close()
        if self._cache is not None and self._state is not None:
            self._cache.close(self._state, self._guard.write)

    # -- reading -------------------------------------------------------------------

    @property
    def loaded(self) -> bool:
        """Whether the derived state is built (a lazy engine builds it on first use)."""
        return self._state is not None

    @property
    def state(self) -> DerivedState:
        """The derived indexes, reloaded if another process moved the store's revision.

        Inside a read section the state is the section's: no reload, no lock
        (a writer holding the lock may be waiting for this very reader).
        """
        if self._guard.reading and self._state is not None:
            return self._state
        with self._lock:
            if self._state is None:
                self._state = load_state(self.store, self.settings, self.embedder.dim, self._cache)
            elif self.store.revision() != self._state.revision:
                reembed.check_identity(self.store, self.embedder)  # re-embedded by another process?
                self._state = load_state(self.store, self.settings, self.embedder.dim, self._cache)
            return self._state

    @contextmanager
    def reading(self) -> Iterator[DerivedState]:
        """The derived state, consistent for the whole block: writes that update it wait."""
        if not self._guard.reading:
            _ = self.state
        with self._guard.read():
            yield self._state

    @contextmanager
    def source(self, spaces: Spaces) -> Iterator[RecallSource]:
        """What one read of a reader of ``spaces`` reads: the store itself in store-side read mode,
        else the derived state (inside a read section)."""
        if self.store_reads is not None:
            yield self.store_reads.source(spaces)
            return
        with self.reading() as state:
            source = LocalSource(state, self.store, spaces, threads=self.settings.recall_threads)
            try:
                yield source
            finally:
                source.settle()

    @property
    def cache(self) -> DerivedCache | None:
        """The saved copy of the derived state beside the store (``cache.outcome`` says how it loaded)."""
        return self._cache

    @property
    def background(self) -> BackgroundEmbedder:
        """The thread that embeds records written without a vector (a remember that timed out)."""
        return self._background

    def encode_bounded(self, texts: list[str]) -> np.ndarray:
        """Encode within ``settings.remember_embed_timeout`` (``EmbeddingTimeout`` past it)."""
        return self._encoder(texts)

    # -- writing -------------------------------------------------------------------

    def view(self) -> WriteView:
        """What a write plans on: the current derived state, or in store-side read mode the store."""
        if self.store_reads is not None:
            return StoreView(self.store, self.store_reads)
        return LocalView(self.state, self.store)

    def write(self, plan: Callable[[WriteView], Planned[T]], *, attempts: int = WRITE_ATTEMPTS,
              deadline: float = WRITE_DEADLINE, what: str | None = None) -> T:
        """Plan on the current view and commit, again on ``Conflict``; the plan's result.

        ``plan`` runs under the writer lock and may run more than once: it reads
        the store and the view it is given, and must not write. ``attempts`` and
        ``deadline`` bound the retries (``write_attempts``); when they run out,
        the last ``Conflict`` is raised, or one naming ``what`` kept changing.
        """
        failed_reloads, conflict = 0, None
        attempt = 0
        for attempt in write_attempts(at_least=attempts, deadline=deadline):
            with self._lock:
                try:
                    view = self.view()
                except StoreError:  # other processes kept writing while this one reloaded the derived state
                    failed_reloads += 1
                    if failed_reloads > RELOAD_RETRIES:
                        raise
                    continue
                planned = plan(view)
                try:
                    revision = view.revision if planned.batch is None else \
                        self._commit(planned.batch, planned.vectors, view, planned.late)
                except Conflict as exc:  # another process versioned what this plan read: plan again
                    conflict = exc
                    continue
                return planned.result(revision)
        if what is not None or conflict is None:
            raise Conflict(f"{what or 'the write'} kept changing under concurrent writers ({attempt + 1} attempts)")
        raise conflict

    def _commit(self, batch: WriteBatch, vectors: dict[str, np.ndarray], view: WriteView,
                late: list[Passage | Entity | Fact] | None = None) -> int:
        """Write one batch and make the derived indexes follow it; returns the revision.

        ``view`` is the one the batch was planned on. A write the state can follow is journaled before
        the store commits it, under an id the store keeps with the revision: a kill at any point after
        the commit costs the next open a replay, not a rebuild, and a record whose write never committed
        is not replayed (``DerivedCache.load``). When another process wrote in between (the revision
        moved by more than this write), or the write revived passages this state never held, the
        indexes reload. A store view has no indexes to follow: a state built since for some in-process
        read reloads on its next use, as after any other writer.
        """
        state = view.state if isinstance(view, LocalView) else None
        delta = None
        if state is not None and state is self._state and not batch.is_empty():
            batch.write_id = uuid.uuid4().hex
            delta = Delta.of_write(self.store, batch, vectors, state.revision + 1, late)
        journaled = delta is not None and self._cache is not None
        if journaled:
            self._cache.journal(delta)
        try:
            revision = self.store.write(batch) if not batch.is_empty() else self.store.revision()
        except BaseException:
            if journaled:
                self._cache.settle(None)  # nothing committed: the record goes
            raise
        if state is None or revision == view.revision:
            if journaled:
                self._cache.settle(None)
            return revision
        followed, seconds = False, 0.0
        if delta is not None and delta.revision == revision:  # else another process wrote in between
            with self._guard.write():
                clock = time.perf_counter()
                followed = state.apply_delta(delta)
                seconds = time.perf_counter() - clock  # about what replaying the write's record would cost
        if self._cache is not None:
            self._cache.settle(state if followed else None, self._guard.write, seconds)
        if not followed:
            self._state = load_state(self.store, self.settings, self.embedder.dim, self._cache)
        return revision

    # -- maintenance -------------------------------------------------------------------

    def relink(self) -> list[tuple[str, int]]:
        """Build again whole each vector graph linked as hippo does not link one of its size today (an
        older hippo's, ``VectorIndex.relink``), then save the state; the graphs built, as (kind, shard).
        This process's writes and reads wait meanwhile (minutes a million rows)."""
        if self.store_reads is not None:
            raise StoreError("store-side reads (HIPPO_NEO4J_READ=store) keep no vector graph in the process: "
                             "nothing to relink")
        if self._cache is not None and not self._cache.owner:  # it could not save what it built
            raise StoreError(f"another process keeps the saved derived state of {self.store.url} (a server?): "
                             "stop it, then relink")
        with self._lock:
            state = self.state
            with self._guard.write():
                done = [(kind, code) for kind, index in state.vector_indexes() for code in index.relink()]
            if done and self._cache is not None:
                self._cache.save(state, self._guard.write)
        return done

    # -- the background embedding ----------------------------------------------------

    def wait_embedded(self, timeout: float = 30.0) -> bool:
        """Block until the background embedding has nothing left (True) or ``timeout`` passes."""
        if not self.view().unembedded:
            return True
        self._background.wake()
        return self._background.idle.wait(timeout) and not self.view().unembedded

    def _embed_pending(self, limit: int = 256) -> bool:
        """Embed every record written without a vector, ``limit`` to a write; True when done. Store-side,
        listing them scans every record, so a pass lists them once: a write that times out meanwhile
        wakes the next pass."""
        every = sorted(self.view().unembedded)
        for start in range(0, len(every), limit):
            self._embed_records(every[start : start + limit])
        return True

    def _embed_records(self, keys: list[tuple[str, str]]) -> None:
        by_kind = {kind: [rid for k, rid in keys if k == kind] for kind in ("passage", "entity", "fact")}
        store = self.store
        records = [*store.passages(by_kind["passage"]), *store.entities(by_kind["entity"]),
                   *store.facts(by_kind["fact"])]
        vectors, fresh = embed_missing(records, store, self.embedder.encode)  # no deadline here

        def plan(view: WriteView) -> Planned[None]:
            waiting = view.waiting(records)  # another process may have embedded some since
            entities = [r for r in waiting if record_kind(r) == "entity"]
            synonyms = link_synonyms(entities, vectors, view, self.settings)
            batch = WriteBatch(passages=[r for r in waiting if record_kind(r) == "passage"], entities=entities,
                               facts=[r for r in waiting if record_kind(r) == "fact"], synonyms=synonyms,
                               vectors={h: vectors[h] for h in fresh})
            return Planned(batch, lambda _: None, vectors, late=waiting)

        self.write(plan)

