"""Who owns each ``session:<id>`` space: the first user to open it."""

from __future__ import annotations

from hippo.access.principal import Principal
from hippo.errors import AccessDenied
from hippo.spaces import session_space
from hippo.store.base import Store

SESSION_NAMESPACE = "hippo.access.sessions"  # session id -> owner user id


class SessionRegistry:
    """Who owns each ``session:<id>`` space: the first user to open it.

    Kept in the store's key-value area so every process agrees; without a
    store, in this process only.
    """

    def __init__(self, store: Store | None = None) -> None:
        self.store = store
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
