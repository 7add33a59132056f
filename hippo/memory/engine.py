"""``Memory``: the public face of the engine. Open, index, recall, retrieve."""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import numpy as np

from hippo.config import Settings
from hippo.documents import expand_paths
from hippo.embed import Embedder, open_embedder
from hippo.errors import InvalidInput
from hippo.extract import Extractor, SpacyExtractor
from hippo.llm.extractor import usage_meter
from hippo.llm.parts import llm_parts
from hippo.memory import lifecycle, reembed, walk
from hippo.memory.clues import ClueExpander
from hippo.memory.context import Classifier
from hippo.memory.context import context as user_context
from hippo.memory.core import Engine, Planned
from hippo.memory.extent import count_text_form
from hippo.memory.hits import assemble_hits, read_passages, recall_hits
from hippo.memory.indexing import (
    Progress,
    assign_ids,
    batch_progress,
    document_ids,
    prepare,
    validate_documents,
)
from hippo.memory.inputs import MAX_TOKEN_BUDGET, check_count, check_query, space_set
from hippo.memory.kept import ByRevision
from hippo.memory.lifecycle import NearDuplicatePolicy
from hippo.memory.recall import Recaller
from hippo.memory.retrieve import (
    Mode,
    dense_ranking,
    keyword_ranking,
    reciprocal_rank_fusion,
    source_rankings,
)
from hippo.memory.source import LocalSource
from hippo.memory.state import DerivedState
from hippo.memory.store_reads import StoreReads
from hippo.memory.write_view import WriteView
from hippo.models import (
    Document,
    ForgetResult,
    Hit,
    IndexResult,
    MemoryItem,
    MemoryVersion,
    Neighborhood,
    RecallResult,
    RememberResult,
    RestoreResult,
    Stats,
    TextForm,
)
from hippo.store import Store, open_store

INDEX_WRITE_ATTEMPTS = 8
TEXT_FORMS = 16  # sets of spaces whose text form (``text_form``) is kept, each for one store revision


class Memory:
    """A HippoRAG memory over one store.

    >>> with Memory.open(":memory:") as memory:
    ...     memory.index([{"title": "Tokyo", "text": "Tokyo is the capital of Japan."}])
    ...     result = memory.recall("What is Japan's capital?")

    ``memory.engine`` (``hippo.memory.core.Engine``) owns the derived state and every
    write; ``memory.engine.state`` is the current derived state, for a one-off look.
    """

    def __init__(self, store: Store, *, settings: Settings | None = None, embedder: Embedder | None = None,
                 extractor: Extractor | None = None) -> None:
        self.settings = settings or Settings()
        self.store = store
        self.embedder = embedder or open_embedder(self.settings)
        self._query_parser = SpacyExtractor()
        # Without settings.llm_model every part is None and openai is never imported.
        self.llm = llm_parts(self.settings, store=store, fallback=self._query_parser)
        self.extractor = extractor or self.llm.extractor or self._query_parser
        reembed.bind(self.store, self.embedder, reembed_on_mismatch=self.settings.reembed_on_open)
        self._store_reads = StoreReads.of(store, self.settings)  # None: recall reads the in-process state
        self.engine = Engine(self.store, self.settings, self.embedder, store_reads=self._store_reads)
        self._recaller = Recaller(self.settings, self.embedder.encode, self._query_parser.query_phrases,
                                  fact_filter=self.llm.fact_filter, query_hops=self._query_parser.query_hops)
        self._expander = ClueExpander(self.settings, self.embedder.encode, writer=self.llm.clue_writer)
        self._text_forms: ByRevision[frozenset[str] | None, TextForm] = ByRevision(TEXT_FORMS)

    @classmethod
    def open(cls, store: str | Store | None = None, *, settings: Settings | None = None,
             embedder: Embedder | None = None, extractor: Extractor | None = None) -> Memory:
        """Open a memory on a SQLite path, ``":memory:"``, a ``neo4j://`` URL or a store object.

        Without ``store``, ``settings.store`` (env ``HIPPO_STORE``) names it.
        """
        settings = settings or Settings()
        if store is None or isinstance(store, str):
            store = open_store(store or settings.store)
        try:
            return cls(store, settings=settings, embedder=embedder, extractor=extractor)
        except BaseException:
            store.close()
            raise

    def load_models(self) -> Memory:
        """Load now what the first recall or write would (spaCy's pipeline is loaded on first use):
        a server's first request is then as fast as the rest."""
        self._query_parser.load()
        return self

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.engine.close()
        self.llm.close()
        self.store.close()

    # -- state ---------------------------------------------------------------------

    @property
    def store_reads(self) -> StoreReads | None:
        """The store-side read mode's source factory (``settings.neo4j_read == "store"``), else None."""
        return self._store_reads

    @contextmanager
    def reading(self) -> Iterator[DerivedState]:
        """The derived state, consistent for the whole block: writes that update it wait.

        Everything that reads the projection or the vector and keyword indexes
        (recall, retrieve, graph walks) runs inside one. For a one-off look
        outside a block, ``memory.engine.state`` (reloaded if another process wrote).
        """
        with self.engine.reading() as state:
            yield state

    # -- writing -------------------------------------------------------------------

    def index(self, documents: Iterable[Document | Mapping[str, Any] | str | os.PathLike[str]], *,
              space: str | None = None, extractor: Extractor | None = None,
              progress: Progress | None = None) -> IndexResult:
        """Add documents. Passages already stored are skipped, so re-indexing is a no-op.

        A ``pathlib.Path`` (a file or a folder) stands for the documents of its
        files: PDF, HTML, DOCX, PPTX, Markdown, text, JSON/JSONL corpora
        (``hippo.documents``). Passages are split on headings and pages and
        keep their source path, page and heading path.

        Every document is validated before anything is written, so bad input
        writes nothing. Documents are then written in batches of
        ``settings.index_batch_documents``, each one transaction: a crash
        mid-call leaves whole batches only, and calling again resumes where
        it stopped (stored passages are skipped). One transaction for a whole
        corpus would not fit a database server's transaction memory.

        A caller's id outside ``org`` is owned by its space: ``X`` in
        ``user:ann`` is stored as ``user:ann/X`` (``result.ids``; see ``hippo.spaces``).
        """
        docs = assign_ids(validate_documents(expand_paths(documents, space=space), self.settings, space), self.store)
        size = self.settings.index_batch_documents
        batches = [docs[start : start + size] for start in range(0, len(docs), size)] or [[]]
        total = IndexResult(documents=len(docs), ids=document_ids(docs))
        timings: dict[str, float] = {}
        llm_usage = usage_meter(extractor or self.extractor)
        for number, batch in enumerate(batches):
            report = None if progress is None else batch_progress(progress, number, len(batches), size, len(docs))
            result = self._index_batch(batch, extractor or self.extractor, report)
            for field in ("documents_updated", "passages_added", "passages_unchanged", "passages_retired",
                          "entities_added", "facts_added", "mentions_added", "synonyms_added", "vectors_encoded"):
                setattr(total, field, getattr(total, field) + getattr(result, field))
            for stage, seconds in result.timings.items():
                timings[stage] = timings.get(stage, 0.0) + seconds
            total.revision = result.revision
        total.timings = {stage: round(seconds, 4) for stage, seconds in timings.items()}
        total.usage = llm_usage()
        return total

    def _index_batch(self, docs: list[Document], extractor: Extractor, progress: Progress | None) -> IndexResult:
        def plan(view: WriteView) -> Planned[IndexResult]:
            prepared = prepare(docs, store=self.store, view=view, embedder=self.embedder, extractor=extractor,
                               settings=self.settings, progress=progress)
            clock, batch = time.perf_counter(), prepared.batch

            def result(revision: int) -> IndexResult:
                prepared.timings["store"] = time.perf_counter() - clock
                return IndexResult(
                    documents=len(docs), documents_updated=prepared.documents_updated,
                    passages_added=len(batch.passages), passages_unchanged=prepared.passages_unchanged,
                    passages_retired=len(batch.retire), entities_added=len(batch.entities),
                    facts_added=len(batch.facts), mentions_added=len(batch.mentions),
                    synonyms_added=len(batch.synonyms), vectors_encoded=prepared.vectors_encoded, revision=revision,
                    timings=prepared.timings,
                )
            return Planned(batch, result, prepared.vectors)

        # An index batch re-plans (extracts, embeds) on every attempt: a few of them, not a deadline's worth.
        return self.engine.write(plan, attempts=INDEX_WRITE_ATTEMPTS, deadline=0.0)

    # -- reading -------------------------------------------------------------------

    def recall(self, query: str, *, n: int = 5, k: int = 10, token_budget: int | None = None,
               spaces: Iterable[str] | None = None, expand: bool | None = None) -> RecallResult:
        """Clues (seed ids and surrogate queries) and draft hits ranked by PPR mass.

        ``n`` caps clues, ``k`` caps hits, ``token_budget`` caps the hits' text
        after dedup. ``spaces`` are the spaces the caller may read (all by default).
        ``expand`` (default ``settings.clue_expand``) adds checked MemoRAG-style
        clues and lets the passages they find share the hits (``hippo.memory.clues``).
        """
        query = check_query(query)
        check_count("n", n)
        check_count("k", k)
        if token_budget is not None:
            check_count("token_budget", token_budget, high=MAX_TOKEN_BUDGET)
        clock = time.perf_counter()
        with self.engine.source(space_set(spaces)) as source:
            ranked = self._recaller.rank(query, source, n=n, k=k)
            if self.settings.clue_expand if expand is None else expand:
                ranked = self._expander.expand(query, ranked, source, n=n)
            hits = recall_hits(ranked, source, self.store, k=k, token_budget=token_budget)
        ranked.timings["total"] = time.perf_counter() - clock
        note = "; ".join(x for x in (_NOTES.get(ranked.strategy), *ranked.notes) if x) or None
        return RecallResult(
            query=query, strategy=ranked.strategy, clues=ranked.clues, hits=hits, seeds=ranked.seeds,
            note=note, timings={key: round(v, 5) for key, v in ranked.timings.items()},
        )

    def retrieve(self, query: str, *, k: int = 10, mode: Mode = "dense", spaces: Iterable[str] | None = None,
                 token_budget: int | None = None) -> list[Hit]:
        """Plain retrieval without the graph: ``dense``, ``bm25`` or ``hybrid`` (RRF of both)."""
        query = check_query(query)
        check_count("k", k)
        if token_budget is not None:
            check_count("token_budget", token_budget, high=MAX_TOKEN_BUDGET)
        if mode not in ("dense", "bm25", "hybrid"):
            raise InvalidInput("mode", f"must be dense, bm25 or hybrid, got {mode!r}")
        readable, pool = space_set(spaces), max(k * 4, 50)
        q = self.embedder.encode([query])[0] if mode != "bm25" else None
        words = query if mode != "dense" else None
        with self.engine.source(readable) as source:
            if isinstance(source, LocalSource):
                dense = dense_ranking(source.state, q, readable, pool) if q is not None else []
                sparse = keyword_ranking(source.state, words, readable, pool) if words is not None else []
            else:
                dense, sparse = source_rankings(source, q, words, pool)
        ranking = {"dense": dense, "bm25": sparse}.get(mode) or reciprocal_rank_fusion(dense, sparse)
        dense_by_id, sparse_by_id = dict(dense), dict(sparse)

        def stage_scores(pid: str) -> dict[str, float]:
            scores = {"dense": dense_by_id.get(pid), "sparse": sparse_by_id.get(pid)}
            return {name: round(v, 6) for name, v in scores.items() if v is not None}

        return assemble_hits(ranking, read_passages(self.store), k=k, token_budget=token_budget,
                             stage_scores=stage_scores)

    def walk(self, seed_weights: Mapping[str, float], *, k: int = 10, token_budget: int | None = None,
             spaces: Iterable[str] | None = None) -> list[Hit]:
        """Passages ranked by the PPR mass flowing from explicit seed ids (``hippo.memory.walk``)."""
        with self.engine.source(space_set(spaces)) as source:
            return walk.seed_walk(source, self.store, self.settings, seed_weights, k=k, token_budget=token_budget)

    def neighbors(self, seed_ids: Iterable[str], *, hops: int = 1, limit: int = 50,
                  spaces: Iterable[str] | None = None) -> Neighborhood:
        """The nodes within ``hops`` edges of the seeds, ranked by PPR mass, and the edges between them."""
        with self.engine.source(space_set(spaces)) as source:
            return walk.neighbors(source, self.store, self.settings, seed_ids, hops=hops, limit=limit)

    def context(self, user_id: str, *, budget_tokens: int | None = None, slot_tokens: int | None = None,
                classify: Classifier | None = None) -> str:
        """The user-context block of ``user_id`` (``hippo.memory.context``); access is not checked here."""
        return user_context(self, user_id, budget_tokens=budget_tokens, slot_tokens=slot_tokens, classify=classify)

    # -- small-text memory and the lifecycle -------------------------------------------

    def remember(self, text: str, *, custom_id: str | None = None, label: str | None = None, space: str = "org",
                 on_near_duplicate: NearDuplicatePolicy = "reuse", props: dict[str, Any] | None = None,
                 confidence: float | None = None, salience: float | None = None,
                 agent_id: str | None = None) -> RememberResult:
        """Store one fact, preference or decision, searchable by keyword and in the graph on return.

        ``custom_id`` is the idempotency key: the same key with a new text is a
        new version of the same memory (history kept), the same text is
        ``unchanged``. Without it, the same text again is ``reused`` unless
        ``on_near_duplicate="create"``. The embedding waits at most
        ``settings.remember_embed_timeout`` seconds; after that the memory is
        written with ``embedded: false`` and embedded in the background.
        """
        return lifecycle.remember(self.engine, self.extractor, text, custom_id=custom_id, label=label, space=space,
                                  on_near_duplicate=on_near_duplicate, props=props, confidence=confidence,
                                  salience=salience, agent_id=agent_id)

    def forget(self, uid: str | None = None, *, custom_id: str | None = None, space: str = "org",
               dry_run: bool = False, cascade: bool = True, reason: str | None = None,
               spaces: Iterable[str] | None = None) -> ForgetResult:
        """Tombstone a memory, document or passage, and all derived from it; reversible by ``restore``.

        The result (or, with ``dry_run``, the preview) lists the passages,
        facts, entities that lose their last live passage, and edges it takes
        out. ``cascade=False`` refuses when derived facts or entities would go.
        ``spaces``: what the caller may read; entities and edges are counted
        in that view (another space's passages are never hinted at).
        """
        return lifecycle.forget(self.engine, uid, custom_id=custom_id, space=space, dry_run=dry_run, cascade=cascade,
                                reason=reason, spaces=space_set(spaces))

    def restore(self, uid: str, *, spaces: Iterable[str] | None = None) -> RestoreResult:
        """Bring back what a ``forget`` of ``uid`` took out (``spaces``: as for ``forget``)."""
        return lifecycle.restore(self.engine, uid, space_set(spaces))

    def history(self, custom_id: str | None = None, *, uid: str | None = None,
                space: str = "org") -> list[MemoryVersion]:
        """Every version of a memory or document, oldest first."""
        return lifecycle.history(self.store, custom_id, uid=uid, space=space)

    def memories(self, *, spaces: Iterable[str] | None = None, live: bool = True,
                 limit: int = 1000) -> list[MemoryItem]:
        """Remembered memories in ``spaces`` (all by default), newest first."""
        check_count("limit", limit, high=100_000)
        return lifecycle.memories(self.store, spaces=space_set(spaces), live=live, limit=limit)

    def delete_documents(self, ids: list[str], *, reason: str | None = None) -> int:
        """Tombstone documents by id (with all derived from them); returns how many were live."""
        return lifecycle.delete_documents(self.engine, ids, reason=reason)

    def set_remember_instructions(self, text: str, space: str = "org") -> None:
        """What an agent should remember in ``space`` (at most 4 KiB); an empty text clears it."""
        lifecycle.set_instructions(self.store, text, space)

    def get_remember_instructions(self, space: str = "org") -> str | None:
        return lifecycle.get_instructions(self.store, space)

    def wait_embedded(self, timeout: float = 30.0) -> bool:
        """Block until the background embedding has nothing left (True) or ``timeout`` passes."""
        return self.engine.wait_embedded(timeout)

    def stats(self) -> Stats:
        counts = self.store.counts()
        model = self.store.embedding_model()
        return Stats(**counts, revision=self.store.revision(), embedding_model=model[0] if model else None,
                     embedding_backend=self.store.embedding_backend(), store=self.store.url)

    def live_spaces(self) -> frozenset[str]:
        """Every space that holds a live passage (store-side: read from the store once a revision)."""
        if self._store_reads is not None:
            return self._store_reads.live_spaces()
        return walk.graph_spaces(self.engine)

    def text_form(self, spaces: Iterable[str] | None = None) -> TextForm:
        """The facts and entities a reader of ``spaces`` reaches, and their size in tokens
        (``hippo.memory.extent``); worked out once per set of spaces and store revision."""
        readable = space_set(spaces)
        return self._text_forms.get(readable, self.store.revision(),
                                    lambda: count_text_form(self.engine, self.store, readable))

    def graph_stats(self) -> dict[str, int]:
        """Vertex and edge counts of the walk graph, by kind (store-side: counted in the store)."""
        if self._store_reads is not None:
            return self._store_reads.graph_stats()
        with self.reading() as state:
            return state.projection.stats()

    def embed(self, texts: list[str]) -> np.ndarray:
        return self.embedder.encode(texts)


_NOTES = {
    "empty": "memory holds no passage: nothing to recall yet; the query itself is the only clue",
    "dense": "no query entity or fact matched the graph: hits are plain dense retrieval",
    "entity_link": "no fact seed; PPR ran from query entities linked to the graph",
}
