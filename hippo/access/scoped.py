"""``ScopedMemory``: a ``Memory`` as one principal sees it.

The engine is principal-agnostic: it takes ``spaces=`` on reads and ``space=``
on writes. This facade decides those for its principal on every call and hands
the engine only what the principal may see. It mirrors every public ``Memory``
method with the same parameters, less the ones it decides itself
(tests/test_access_members.py keeps the two in step).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from hippo.access.principal import Principal, Scope, require
from hippo.access.sessions import SessionRegistry
from hippo.config import Settings
from hippo.errors import AccessDenied, InvalidInput, NotFound
from hippo.memory.inputs import target_uid
from hippo.models import (Document, ForgetResult, Hit, IndexResult, MemoryItem, MemoryVersion, Neighborhood,
                          RecallResult, RememberResult, RestoreResult, Stats, TextForm)
from hippo.spaces import user_space

if TYPE_CHECKING:
    from hippo.extract import Extractor
    from hippo.memory import Memory
    from hippo.memory.context import Classifier
    from hippo.memory.indexing import Progress
    from hippo.memory.lifecycle import NearDuplicatePolicy
    from hippo.memory.retrieve import Mode

log = logging.getLogger(__name__)

MAX_CLEAR = 1_000_000  # documents one clear call may tombstone


class ClearResult(BaseModel):
    """What ``clear`` removed (or, on a dry run, would remove) from a user's space."""

    model_config = ConfigDict(populate_by_name=True, alias_generator=to_camel)

    space: str
    dry_run: bool
    documents: list[str] = Field(default_factory=list)
    count: int = 0


class ScopedMemory:
    """A ``Memory`` as one principal sees it.

    Reads pass the principal's readable spaces to the engine (intersected with
    any ``spaces`` the caller names, so asking for a hidden space reads
    nothing rather than confirming it exists). Writes check write access to
    the target space first and raise ``AccessDenied`` naming the space and the
    missing right; nothing is written then. Ids the principal cannot read are
    indistinguishable from ids that do not exist.
    """

    def __init__(self, memory: Memory, principal: Principal, *, sessions: SessionRegistry | None = None) -> None:
        self.memory = memory
        self.principal = principal
        self.sessions = sessions or SessionRegistry(memory.store)

    @property
    def settings(self) -> Settings:
        return self.memory.settings

    def session(self, session_id: str) -> ScopedMemory:
        """The same memory with ``session:<id>`` readable and writable (claimed on first use)."""
        return ScopedMemory(self.memory, self.sessions.claim(self.principal, session_id), sessions=self.sessions)

    # -- checks --------------------------------------------------------------------

    def _readable(self, spaces: Iterable[str] | None) -> frozenset[str] | None:
        if not self.principal.has_scope("read"):
            raise AccessDenied(self.principal.home, "read (the key has no 'read' scope)", who=self.principal.user_id)
        allowed = self.principal.read_spaces()
        if spaces is None:
            return allowed
        if isinstance(spaces, str):
            spaces = [spaces]
        asked = frozenset(spaces)
        return asked if allowed is None else asked & allowed

    def _require(self, right: Scope, space: str) -> None:
        require(self.principal, right, space)

    def _visible(self, hits: list[Hit], readable: frozenset[str] | None) -> list[Hit]:
        """Defence in depth: never hand out a hit from a space the reader may not read."""
        if readable is None:
            return hits
        kept = [h for h in hits if h.space in readable]
        if len(kept) != len(hits):
            log.error("engine returned hits outside the reader's spaces; dropped %d", len(hits) - len(kept))
        return kept

    def _record(self, uid: str) -> tuple[str, str] | None:
        """(id, space) of a document, memory or passage the principal may read, else None."""
        if not isinstance(uid, str) or not uid:
            raise InvalidInput("uid", "is empty")
        store = self.memory.store
        found = store.documents([uid])
        space = found[0].space if found else None
        if space is None:
            passages = store.passages([uid])
            space = passages[0].space if passages else None
        if space is None or not self.principal.can_read(space):
            return None
        return uid, space

    def _not_found(self, uid: str) -> NotFound:
        # Word for word what the engine says of an id that does not exist.
        return NotFound(f"uid {uid!r}: no memory, document or passage has this id")

    # -- reading -------------------------------------------------------------------

    def recall(self, query: str, *, n: int = 5, k: int = 10, token_budget: int | None = None,
               spaces: Iterable[str] | None = None, expand: bool | None = None) -> RecallResult:
        readable = self._readable(spaces)
        result = self.memory.recall(query, n=n, k=k, token_budget=token_budget, spaces=readable, expand=expand)
        result.hits = self._visible(result.hits, readable)
        return result

    def retrieve(self, query: str, *, k: int = 10, mode: Mode = "dense", spaces: Iterable[str] | None = None,
                 token_budget: int | None = None) -> list[Hit]:
        readable = self._readable(spaces)
        hits = self.memory.retrieve(query, k=k, mode=mode, spaces=readable, token_budget=token_budget)
        return self._visible(hits, readable)

    def walk(self, seed_weights: Mapping[str, float], *, k: int = 10, token_budget: int | None = None,
             spaces: Iterable[str] | None = None) -> list[Hit]:
        """PPR from explicit seed ids over the readable subgraph; hidden seed ids count as unknown."""
        readable = self._readable(spaces)
        return self._visible(self.memory.walk(seed_weights, k=k, token_budget=token_budget, spaces=readable),
                             readable)

    def neighbors(self, seed_ids: Iterable[str], *, hops: int = 1, limit: int = 50,
                  spaces: Iterable[str] | None = None) -> Neighborhood:
        """Nodes and weighted edges around seeds, within the readable subgraph."""
        return self.memory.neighbors(seed_ids, hops=hops, limit=limit, spaces=self._readable(spaces))

    def memories(self, *, spaces: Iterable[str] | None = None, live: bool = True,
                 limit: int = 1000) -> list[MemoryItem]:
        return self.memory.memories(spaces=self._readable(spaces), live=live, limit=limit)

    def history(self, custom_id: str | None = None, *, uid: str | None = None,
                space: str | None = None) -> list[MemoryVersion]:
        uid, named_in = target_uid(uid, custom_id, space or self.principal.home)
        if named_in is None:
            record = self._record(uid)
            if record is None:
                raise self._not_found(uid)
            return self.memory.history(uid=uid)
        if not self.principal.can_read(named_in):
            raise NotFound(f"custom_id: no memory {custom_id!r} in space {named_in!r}")
        return self.memory.history(custom_id, space=named_in)

    def get_remember_instructions(self, space: str | None = None) -> str | None:
        space = space or self.principal.home
        self._require("read", space)
        return self.memory.get_remember_instructions(space=space)

    def context(self, user_id: str | None = None, *, budget_tokens: int | None = None,
                slot_tokens: int | None = None, classify: Classifier | None = None) -> str:
        """The user-context block of ``user_id`` (default: the principal's own)."""
        user_id = user_id or self.principal.user_id
        self._require("read", user_space(user_id))
        return self.memory.context(user_id, budget_tokens=budget_tokens, slot_tokens=slot_tokens, classify=classify)

    def stats(self) -> Stats:
        """Store-wide counts: they describe every space, so admins only."""
        self._require("admin", "*")
        return self.memory.stats()

    def graph_stats(self) -> dict[str, int]:
        self._require("admin", "*")
        return self.memory.graph_stats()

    def live_spaces(self) -> frozenset[str]:
        """The spaces holding live passages among those the principal may read (no other name leaks)."""
        live, readable = self.memory.live_spaces(), self._readable(None)
        return live if readable is None else live & readable

    def text_form(self, spaces: Iterable[str] | None = None) -> TextForm:
        """The size of what the principal may read of ``spaces``, as text."""
        return self.memory.text_form(self._readable(spaces))

    def embed(self, texts: list[str]) -> np.ndarray:
        """The encoder's vectors of ``texts``: they read nothing stored, so every principal may."""
        return self.memory.embed(texts)

    def wait_embedded(self, timeout: float = 30.0) -> bool:
        return self.memory.wait_embedded(timeout)

    # -- writing -------------------------------------------------------------------

    def index(self, documents: Iterable[Document | Mapping[str, Any] | str | os.PathLike[str]], *,
              space: str | None = None, extractor: Extractor | None = None,
              progress: Progress | None = None) -> IndexResult:
        """Index documents; every target space must be writable, or nothing is written.

        A caller's ids are owned by their space (``hippo.spaces``), so the same id in a
        space the caller cannot see is another document and is never confirmed.
        """
        from hippo.documents import expand_paths
        from hippo.memory.indexing import assign_ids, validate_documents

        docs = validate_documents(expand_paths(documents, space=space), self.memory.settings, space)
        for doc in docs:
            self._require("write", doc.space)
        docs = assign_ids(docs, self.memory.store)
        self._check_ids_free(docs)
        return self.memory.index(docs, extractor=extractor, progress=progress)

    def _check_ids_free(self, docs: list[Document]) -> None:
        """An ``org`` id stored in another space before ids were owned by their space
        (older stores) would move that record: refuse before anything is written."""
        ids = {doc.id: i for i, doc in enumerate(docs) if doc.id is not None}
        for record in self.memory.store.documents(list(ids)) if ids else []:
            if record.space == docs[ids[record.id]].space or self.principal.can_write(record.space):
                continue
            if self.principal.can_read(record.space):
                raise AccessDenied(record.space, "write", who=self.principal.user_id)
            raise InvalidInput(f"documents[{ids[record.id]}].id", "names a stored document you may not write; "
                                                                 "give it another id")

    def remember(self, text: str, *, custom_id: str | None = None, label: str | None = None,
                 space: str | None = None, on_near_duplicate: NearDuplicatePolicy = "reuse",
                 props: dict[str, Any] | None = None, confidence: float | None = None,
                 salience: float | None = None, agent_id: str | None = None) -> RememberResult:
        space = space or self.principal.home
        self._require("write", space)
        return self.memory.remember(text, custom_id=custom_id, label=label, space=space,
                                    on_near_duplicate=on_near_duplicate, props=props, confidence=confidence,
                                    salience=salience, agent_id=agent_id)

    def set_remember_instructions(self, text: str, space: str | None = None) -> None:
        space = space or self.principal.home
        self._require("write", space)
        self.memory.set_remember_instructions(text, space=space)

    def forget(self, uid: str | None = None, *, custom_id: str | None = None, space: str | None = None,
               dry_run: bool = False, cascade: bool = True, reason: str | None = None) -> ForgetResult:
        """Forget by uid or custom id (or both, naming the same memory). What the result lists
        as leaving the graph is what leaves this principal's view, nothing about other spaces."""
        uid, named_in = target_uid(uid, custom_id, space or self.principal.home)
        options = {"dry_run": dry_run, "cascade": cascade, "reason": reason, "spaces": self.principal.read_spaces()}
        if named_in is None:
            record = self._record(uid)
            if record is None:
                raise self._not_found(uid)
            self._require("forget", record[1])
            return self.memory.forget(uid, **options)
        self._require("forget", named_in)
        return self.memory.forget(custom_id=custom_id, space=named_in, **options)

    def restore(self, uid: str) -> RestoreResult:
        record = self._record(uid)
        if record is None:
            raise self._not_found(uid)
        self._require("forget", record[1])
        return self.memory.restore(uid, spaces=self.principal.read_spaces())

    def delete_documents(self, ids: Iterable[str], *, reason: str | None = None) -> int:
        """Tombstone documents. Ids the principal cannot read count as absent (not errors)."""
        wanted = list(dict.fromkeys(ids))
        records = self.memory.store.documents(wanted)
        visible = [r for r in records if self.principal.can_read(r.space)]
        for record in visible:
            self._require("forget", record.space)
        return self.memory.delete_documents([r.id for r in visible], reason=reason) if visible else 0

    def clear(self, user_id: str | None = None, *, dry_run: bool = True, reason: str | None = "cleared") -> ClearResult:
        """Forget everything live in ``user:<id>``: the user themself or an admin. Dry run by default."""
        user_id = user_id or self.principal.user_id
        space = user_space(user_id)
        if user_id != self.principal.user_id and not self.principal.is_admin:
            raise AccessDenied(space, "clear", who=self.principal.user_id)
        self._require("forget", space)
        records = self.memory.store.find_documents(spaces=frozenset({space}), live=True, limit=MAX_CLEAR)
        ids = [r.id for r in records]
        if ids and not dry_run:
            self.memory.delete_documents(ids, reason=reason)
        return ClearResult(space=space, dry_run=dry_run, documents=ids, count=len(ids))
