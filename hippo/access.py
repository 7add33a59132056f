"""Who is asking, and what they may read and write: principals, grants, API keys.

The engine is principal-agnostic: it takes ``spaces=`` on reads and ``space=``
on writes. This module decides those sets for a principal:

- ``org`` (global knowledge) is readable by everyone, writable by admins (or a grant);
- ``user:<id>`` is readable and writable by that user;
- ``session:<id>`` by the user who owns the session (``SessionRegistry``);
- any other (named) space through grants to users (``user:<id>``), groups
  (``group:<name>``) or everyone (``*``);
- ``admin`` reads and writes every space.

Over HTTP the principal comes from an API key (``hippo.keys``). Space names follow
one pattern (``hippo.spaces``). ``ScopedMemory`` enforces all of this on every
call and hands the engine only what the principal may see.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel

from hippo.errors import AccessDenied, InvalidInput, NotFound
from hippo.memory.inputs import target_uid
from hippo.models import DEFAULT_SPACE, Hit, RecallResult
from hippo.spaces import check_name, check_space, session_space, user_space

if TYPE_CHECKING:
    from hippo.memory import Memory

log = logging.getLogger(__name__)

Scope = Literal["read", "write", "forget", "admin"]
ALL_SCOPES: frozenset[str] = frozenset({"read", "write", "forget", "admin"})
DEFAULT_SCOPES: frozenset[str] = frozenset({"read", "write", "forget"})

ORG = DEFAULT_SPACE
SESSION_NAMESPACE = "hippo.access.sessions"  # session id -> owner user id
MAX_CLEAR = 1_000_000  # documents one clear call may tombstone


# --- principals -------------------------------------------------------------------


class Principal(BaseModel):
    """Who is asking: resolved once, then carried with every call.

    ``readable``/``writable`` are the spaces this principal may read/write;
    admins read and write every space whatever these hold.
    """

    model_config = ConfigDict(frozen=True)

    user_id: str
    groups: frozenset[str] = frozenset()
    readable: frozenset[str] = frozenset()
    writable: frozenset[str] = frozenset()
    scopes: frozenset[Scope] = DEFAULT_SCOPES  # type: ignore[assignment]

    @field_validator("user_id")
    @classmethod
    def _user_id(cls, value: str) -> str:
        return check_name("user_id", value)

    @property
    def is_admin(self) -> bool:
        return "admin" in self.scopes

    @property
    def home(self) -> str:
        """The user's own space, where their memories go by default."""
        return user_space(self.user_id)

    def has_scope(self, scope: Scope) -> bool:
        return self.is_admin or scope in self.scopes

    def read_spaces(self) -> frozenset[str] | None:
        """What the engine's ``spaces=`` gets: None (every space) for admins."""
        if self.is_admin:
            return None
        return self.readable if "read" in self.scopes else frozenset()

    def can_read(self, space: str) -> bool:
        return self.is_admin or ("read" in self.scopes and space in self.readable)

    def can_write(self, space: str) -> bool:
        return self.is_admin or ("write" in self.scopes and space in self.writable)

    def with_session(self, session_id: str) -> Principal:
        return self.owning([session_space(session_id)])

    def owning(self, spaces: Iterable[str]) -> Principal:
        """The principal with read and write on spaces it owns (its sessions, memories it built)."""
        extra = frozenset(spaces)
        return self.model_copy(update={"readable": self.readable | extra, "writable": self.writable | extra})


class Grant(BaseModel):
    """Access to one named space. Members: ``user:<id>``, ``group:<name>`` or ``*`` (everyone)."""

    model_config = ConfigDict(extra="forbid")

    space: str
    read: list[str] = Field(default_factory=list)
    write: list[str] = Field(default_factory=list)

    @field_validator("space")
    @classmethod
    def _space(cls, value: str) -> str:
        return check_space("space", value)

    def admits(self, members: list[str], user_id: str, groups: frozenset[str]) -> bool:
        return any(m == "*" or m == f"user:{user_id}" or (m.startswith("group:") and m[6:] in groups)
                   for m in members)


def derive_principal(user_id: str, *, groups: Iterable[str] = (), scopes: Iterable[str] = DEFAULT_SCOPES,
                     grants: Iterable[Grant] = (), sessions: Iterable[str] = (),
                     read: Iterable[str] = (), write: Iterable[str] = ()) -> Principal:
    """The principal of a user: own space, ``org``, owned sessions, granted spaces.

    ``read``/``write`` are extra spaces given directly (e.g. on an API key);
    writing a space implies reading it.
    """
    unknown = set(scopes) - ALL_SCOPES
    if unknown:
        raise InvalidInput("scopes", f"unknown scope(s) {sorted(unknown)}; allowed: {sorted(ALL_SCOPES)}")
    group_set = frozenset(check_name("groups", g) for g in groups)
    home = user_space(user_id)
    sessions_spaces = {session_space(s) for s in sessions}
    read, write = [check_space("read", s) for s in read], [check_space("write", s) for s in write]
    writable = {home, *sessions_spaces, *write}
    readable = {ORG, home, *sessions_spaces, *read}
    for grant in grants:
        if grant.admits(grant.write, user_id, group_set):
            writable.add(grant.space)
        if grant.admits(grant.read, user_id, group_set):
            readable.add(grant.space)
    return Principal(user_id=user_id, groups=group_set, readable=frozenset(readable | writable),
                     writable=frozenset(writable), scopes=frozenset(scopes))


def admin_principal(user_id: str = "admin") -> Principal:
    return Principal(user_id=user_id, scopes=frozenset({"admin", *DEFAULT_SCOPES}))


def require(principal: Principal, right: Scope, space: str) -> None:
    """Raise ``AccessDenied`` naming the space and the missing right, unless allowed."""
    if right == "read":
        allowed = principal.can_read(space)
    elif right == "write":
        allowed = principal.can_write(space)
    elif right == "forget":
        allowed = principal.can_write(space) and principal.has_scope("forget")
    else:
        allowed = principal.is_admin
    if not allowed:
        missing = right if principal.has_scope(right) else f"{right} (the key has no {right!r} scope)"
        raise AccessDenied(space, missing, who=principal.user_id)


# --- sessions -------------------------------------------------------------------------


class SessionRegistry:
    """Who owns each ``session:<id>`` space: the first user to open it.

    Kept in the store's key-value area so every process agrees; without one
    (older stores), in this process only.
    """

    def __init__(self, store: Any = None) -> None:
        self.store = store if store is not None and hasattr(store, "get_values") else None
        self._local: dict[str, str] = {}

    def owner(self, session_id: str) -> str | None:
        if self.store is None:
            return self._local.get(session_id)
        return self.store.get_values(SESSION_NAMESPACE, [session_id]).get(session_id)

    def claim(self, principal: Principal, session_id: str) -> Principal:
        """The principal with the session's space added; the session is theirs from now on.

        Another user's session is ``AccessDenied`` (admins may enter any).
        """
        space = session_space(session_id)
        owner = self.owner(session_id)
        if owner is None:
            if self.store is None:
                self._local[session_id] = principal.user_id
            else:
                self.store.put_values(SESSION_NAMESPACE, {session_id: principal.user_id})
                owner = self.owner(session_id)  # a concurrent claim may have won
            owner = owner or principal.user_id
        if owner != principal.user_id and not principal.is_admin:
            raise AccessDenied(space, "read", who=principal.user_id)
        return principal.with_session(session_id)


# --- the facade -----------------------------------------------------------------------


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
    def settings(self) -> Any:
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
        found = store.documents([uid]) if hasattr(store, "documents") else []
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

    def recall(self, query: str, *, spaces: Iterable[str] | None = None, **options: Any) -> RecallResult:
        readable = self._readable(spaces)
        result = self.memory.recall(query, spaces=readable, **options)
        result.hits = self._visible(result.hits, readable)
        return result

    def retrieve(self, query: str, *, spaces: Iterable[str] | None = None, **options: Any) -> list[Hit]:
        readable = self._readable(spaces)
        return self._visible(self.memory.retrieve(query, spaces=readable, **options), readable)

    def walk(self, seed_weights: dict[str, float], *, k: int = 10, token_budget: int | None = None,
             spaces: Iterable[str] | None = None) -> list[Hit]:
        """PPR from explicit seed ids over the readable subgraph; hidden seed ids count as unknown."""
        from hippo.memory.walk import seed_walk

        readable = self._readable(spaces)
        return self._visible(seed_walk(self.memory, seed_weights, spaces=readable, k=k, token_budget=token_budget),
                             readable)

    def neighbors(self, seed_ids: Iterable[str], *, hops: int = 1, limit: int = 50,
                  spaces: Iterable[str] | None = None) -> Any:
        """Nodes and weighted edges around seeds, within the readable subgraph."""
        from hippo.memory.walk import neighbors

        return neighbors(self.memory, seed_ids, spaces=self._readable(spaces), hops=hops, limit=limit)

    def memories(self, *, spaces: Iterable[str] | None = None, **options: Any) -> list[Any]:
        return self.memory.memories(spaces=self._readable(spaces), **options)

    def history(self, custom_id: str | None = None, *, uid: str | None = None, space: str | None = None) -> list[Any]:
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

    def context(self, user_id: str | None = None, **options: Any) -> str:
        """The user-context block of ``user_id`` (default: the principal's own)."""
        from hippo.memory.context import context

        user_id = user_id or self.principal.user_id
        self._require("read", user_space(user_id))
        return context(self.memory, user_id, **options)

    def stats(self) -> Any:
        """Store-wide counts: they describe every space, so admins only."""
        self._require("admin", "*")
        return self.memory.stats()

    def graph_stats(self) -> dict[str, int]:
        self._require("admin", "*")
        return self.memory.graph_stats()

    # -- writing -------------------------------------------------------------------

    def index(self, documents: Iterable[Any], *, space: str | None = None, **options: Any) -> Any:
        """Index documents; every target space must be writable, or nothing is written.

        A caller's ids are owned by their space (``hippo.spaces``), so the same id in a
        space the caller cannot see is another document and is never confirmed.
        """
        from hippo.memory.indexing import assign_ids, validate_documents

        docs = validate_documents(documents, self.memory.settings, space)
        for doc in docs:
            self._require("write", doc.space)
        docs = assign_ids(docs, self.memory.store)
        self._check_ids_free(docs)
        return self.memory.index(docs, **options)

    def _check_ids_free(self, docs: list[Any]) -> None:
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

    def remember(self, text: str, *, space: str | None = None, **options: Any) -> Any:
        space = space or self.principal.home
        self._require("write", space)
        return self.memory.remember(text, space=space, **options)

    def set_remember_instructions(self, text: str, space: str | None = None) -> None:
        space = space or self.principal.home
        self._require("write", space)
        self.memory.set_remember_instructions(text, space=space)

    def forget(self, uid: str | None = None, *, custom_id: str | None = None, space: str | None = None,
               **options: Any) -> Any:
        """Forget by uid or custom id (or both, naming the same memory). What the result lists
        as leaving the graph is what leaves this principal's view, nothing about other spaces."""
        uid, named_in = target_uid(uid, custom_id, space or self.principal.home)
        if named_in is None:
            record = self._record(uid)
            if record is None:
                raise self._not_found(uid)
            named_in = record[1]
            self._require("forget", named_in)
            return self.memory.forget(uid, spaces=self.principal.read_spaces(), **options)
        self._require("forget", named_in)
        return self.memory.forget(custom_id=custom_id, space=named_in, spaces=self.principal.read_spaces(),
                                  **options)

    def restore(self, uid: str) -> Any:
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
