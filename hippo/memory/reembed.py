"""Binding an encoder to a store, and moving a store to another encoder (``hippo reembed``).

A store remembers the model, dimension and backend of its vectors. Opening
it with an encoder whose vectors differ (another model, or int8 against
fp32: torch and ONNX fp32 give the same vectors) fails with an error naming
``hippo reembed`` (``Settings.reembed_on_open`` re-embeds instead). Re-embedding encodes every
record's text once (passages of all versions, entities, facts; duplicates
once, shortest first), stages the vectors beside the live ones in chunks
(an interrupted run resumes from them; readers keep the old vectors
meanwhile), then swaps them in with one transaction. A record written in
between has no staged vector: the swap refuses, and the next round encodes
just those.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from pydantic import BaseModel

from hippo.embed import Embedder, backend_of
from hippo.errors import Conflict, EmbeddingModelMismatch
from hippo.store.base import LEGACY_BACKEND, EmbeddingIdentity, Store, binding_error

log = logging.getLogger("hippo.reembed")

Progress = Callable[[str, int, int], None]
"""Called as (stage, done, total)."""

CHUNK = 2048  # texts per encode-and-stage round: the unit of resumption
ROUNDS = 5


class ReembedResult(BaseModel):
    store: str
    before: str | None  # the identity replaced, described
    after: str
    texts: int  # distinct texts of stored records
    encoded: int  # encoded by this call
    resumed: int  # staged by an earlier, interrupted call
    revision: int
    seconds: float
    skipped: bool = False  # the store already held this encoder's vectors

    def summary(self) -> str:
        if self.skipped:
            return f"{self.store} is already embedded with {self.after}: nothing to do (--force re-embeds)"
        return (f"re-embedded {self.store}: {self.texts} texts ({self.encoded} encoded now, {self.resumed} resumed) "
                f"from {self.before or 'nothing'} to {self.after} in {self.seconds:.1f}s; revision {self.revision}")


def identity_of(embedder: Embedder) -> EmbeddingIdentity:
    return EmbeddingIdentity(embedder.name, int(embedder.dim), backend_of(embedder))


def stored_identity(store: Store) -> EmbeddingIdentity | None:
    model = store.embedding_model()
    if model is None:
        return None
    return EmbeddingIdentity(model[0], model[1], store.embedding_backend() or LEGACY_BACKEND)


def check_identity(store: Store, embedder: Embedder) -> None:
    """Raise the binding error when the store's vectors are not this encoder's (a read only)."""
    bound = stored_identity(store)
    if bound is not None and not bound.compatible(identity_of(embedder)):
        raise binding_error(store.url, bound, identity_of(embedder))


def bind(store: Store, embedder: Embedder, *, reembed_on_mismatch: bool = False) -> None:
    """Bind the encoder to the store on first use; on a mismatch fail, or re-embed when asked to."""
    wanted = identity_of(embedder)
    try:
        store.bind_embedding_model(wanted.model, wanted.dim, wanted.backend)
    except EmbeddingModelMismatch:
        if not reembed_on_mismatch:
            raise
        log.warning("store %s holds vectors of another encoder: re-embedding it for %s", store.url,
                    wanted.describe())
        reembed(store, embedder)


def reembed(store: Store, embedder: Embedder, *, progress: Progress | None = None,
            chunk: int = CHUNK) -> ReembedResult:
    """Replace every stored vector by ``embedder``'s, atomically; see the module docstring."""
    clock = time.perf_counter()
    target = identity_of(embedder)
    before = stored_identity(store)
    encoded = resumed = 0
    for round_ in range(ROUNDS):
        texts = store.embed_texts()
        staged = store.staged_hashes(target)
        if round_ == 0:
            resumed = len(staged & texts.keys())
        todo = sorted((h for h in texts if h not in staged), key=lambda h: len(texts[h]))
        total = len(texts)
        done = total - len(todo)
        if progress:
            progress("re-embed", done, total)
        for start in range(0, len(todo), chunk):
            hashes = todo[start : start + chunk]
            vectors = embedder.encode([texts[h] for h in hashes])
            store.stage_vectors(target, dict(zip(hashes, vectors, strict=True)))
            encoded += len(hashes)
            done += len(hashes)
            if progress:
                progress("re-embed", done, total)
        if not todo and not staged:
            store.stage_vectors(target, {})  # an empty store: mark the identity so the swap can bind it
        try:
            revision = store.swap_staged_vectors(target)
        except Conflict:  # written meanwhile: encode what is new and swap again
            log.info("store %s changed while re-embedding; encoding the new texts", store.url)
            continue
        return ReembedResult(store=store.url, before=before.describe() if before else None,
                             after=target.describe(), texts=len(texts), encoded=encoded, resumed=resumed,
                             revision=revision, seconds=round(time.perf_counter() - clock, 3))
    raise Conflict(f"store {store.url} kept changing during {ROUNDS} re-embedding rounds; run it again when "
                   "writes pause (what was encoded is kept)")


def reembed_url(url: str | None, *, backend: str | None = None, force: bool = False,
                progress: Progress | None = None) -> ReembedResult:
    """``hippo reembed``: open the store at ``url`` (default ``HIPPO_STORE``) without binding it, and
    re-embed it with the configured encoder (``backend`` overrides ``HIPPO_EMBEDDING_BACKEND``)."""
    from pydantic import ValidationError

    from hippo.config import Settings
    from hippo.embed import BACKENDS, open_embedder
    from hippo.errors import InvalidInput
    from hippo.store import open_store

    try:
        settings = Settings(**({"embedding_backend": backend} if backend is not None else {}))
    except ValidationError:
        raise InvalidInput("backend", f"must be one of {', '.join(BACKENDS)}, got {backend!r}") from None
    embedder = open_embedder(settings)
    store = open_store(url or settings.store)
    try:
        target = identity_of(embedder)
        if stored_identity(store) == target and not force:
            return ReembedResult(store=store.url, before=target.describe(), after=target.describe(), texts=0,
                                 encoded=0, resumed=0, revision=store.revision(), seconds=0.0, skipped=True)
        return reembed(store, embedder, progress=progress)
    finally:
        store.close()
