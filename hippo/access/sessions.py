"""Sessions: who owns each ``session:<id>`` space, for every way in (library, MCP, RCP).

One record per session in the store's key-value area, so every process and
every protocol agrees on its owner: the user who created it (RCP's
``memory/build {scope: "session"}``) or who first opened it (``Memory``'s
facade, MCP). Before there was one registry, RCP and the facade each kept
their own namespace, so a session created over RCP could be claimed by
another user through the facade; both old namespaces are still read, and a
session found there keeps its owner.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime

from hippo.access.principal import Principal
from hippo.errors import AccessDenied
from hippo.spaces import session_space
from hippo.store.base import Store

SESSION_NAMESPACE = "hippo.sessions"  # session id -> {"owner": user id or null, "createdAt": ISO time}
_FACADE_NAMESPACE = "hippo.access.sessions"  # before one registry: session id -> owner user id
_RCP_NAMESPACE = "rcp.sessions"  # before one registry: session id -> {"owner", "createdAt"}


@dataclass(frozen=True)
class SessionRecord:
    id: str
    owner: str | None  # None: made by a server without authentication
    created_at: str


class SessionRegistry:
    """The owner of every session. Without a store, in this process only."""

    def __init__(self, store: Store | None = None) -> None:
        self.store = store
        self._local: dict[str, SessionRecord] = {}

    def get(self, session_id: str) -> SessionRecord | None:
        if self.store is None:
            return self._local.get(session_id)
        found = self.store.get_values(SESSION_NAMESPACE, [session_id]).get(session_id)
        if found is not None:
            return _decoded(session_id, found)
        owner = self.store.get_values(_FACADE_NAMESPACE, [session_id]).get(session_id)
        if owner is not None:
            return SessionRecord(id=session_id, owner=owner, created_at="")
        legacy = self.store.get_values(_RCP_NAMESPACE, [session_id]).get(session_id)
        return _decoded(session_id, legacy) if legacy is not None else None

    def create(self, owner: str | None) -> SessionRecord:
        """A new session with a fresh, unguessable id."""
        return self._put(SessionRecord(id=f"ses-{secrets.token_hex(8)}", owner=owner, created_at=_now()))

    def claim(self, principal: Principal, session_id: str) -> Principal:
        """The principal with the session's space added; a session nobody holds becomes theirs.

        A session of another user, or one made without authentication, is
        ``AccessDenied`` (admins may enter any).
        """
        space = session_space(session_id)
        record = self.get(session_id)
        if record is None:
            self._put(SessionRecord(id=session_id, owner=principal.user_id, created_at=_now()))
            record = self.get(session_id)  # a concurrent claim may have won
        owner = record.owner if record else principal.user_id
        if owner != principal.user_id and not principal.is_admin:
            raise AccessDenied(space, "read", who=principal.user_id)
        return principal.with_session(session_id)

    def _put(self, record: SessionRecord) -> SessionRecord:
        if self.store is None:
            self._local.setdefault(record.id, record)
        else:
            self.store.put_values(SESSION_NAMESPACE, {record.id: json.dumps(
                {"owner": record.owner, "createdAt": record.created_at})})
        return record


def _decoded(session_id: str, raw: str) -> SessionRecord:
    record = json.loads(raw)
    return SessionRecord(id=session_id, owner=record.get("owner"), created_at=record.get("createdAt", ""))


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
