"""Who is asking: a ``Principal`` (user, groups, scopes, readable and writable spaces), the
grants that widen it, and the one check every facade asks (``require``).

- ``org`` (global knowledge) is readable by everyone, writable by admins (or a grant);
- ``user:<id>`` is readable and writable by that user;
- ``session:<id>`` by the user who owns the session (``hippo.access.sessions``);
- any other (named) space through grants to users (``user:<id>``), groups
  (``group:<name>``) or everyone (``*``);
- ``admin`` reads and writes every space.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from hippo.errors import AccessDenied, InvalidInput
from hippo.models import DEFAULT_SPACE
from hippo.spaces import check_name, check_space, session_space, user_space

Scope = Literal["read", "write", "forget", "admin"]
ALL_SCOPES: frozenset[str] = frozenset({"read", "write", "forget", "admin"})
DEFAULT_SCOPES: frozenset[str] = frozenset({"read", "write", "forget"})

ORG = DEFAULT_SPACE


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
