"""One RCP request's caller, and which spaces they may read: the one place every read asks.

The principal comes from the API key in the transport headers (``hippo.api.auth``);
an anonymous caller (no key, none required) may read and write everything. Handlers
read through ``Context.read_spaces`` and call the engine through ``Context.scoped``
(``hippo.access.ScopedMemory``), which checks every write.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from hippo.access import Principal, ScopedMemory, admin_principal
from hippo.memory import Memory
from hippo.spaces import session_space
from hippo.store.base import Spaces

SESSION_PREFIX = "session:"
ANONYMOUS = admin_principal("anonymous")


@dataclass(frozen=True)
class LiveSpaces:
    """The spaces holding live passages in one memory (kept by the engine per store revision)."""

    memory: Memory

    def get(self) -> frozenset[str]:
        return self.memory.live_spaces()


@dataclass(frozen=True)
class Context:
    """One request's caller. Handlers take every space set they read from here."""

    live: LiveSpaces
    principal: Principal | None = None

    @property
    def owner(self) -> str | None:
        return self.principal.user_id if self.principal else None

    def may_read(self, space: str) -> bool:
        return self.principal is None or self.principal.can_read(space)

    def scoped(self, memory: Memory, owned: Iterable[str] = ()) -> ScopedMemory:
        """The engine as this caller may use it; ``owned``: spaces of their sessions and built memories."""
        return ScopedMemory(memory, (self.principal or ANONYMOUS).owning(owned))

    def read_spaces(self, scope: Iterable[str] | None = None, session_id: str | None = None,
                    owned: Iterable[str] = ()) -> Spaces:
        """The spaces a read may see.

        ``scope`` None is the live index: every space except other sessions'.
        A session adds its own space. Then the principal's readable spaces cut
        it down. ``None`` comes back when that is everything in the graph, so
        readers who see it all share one cached graph view.
        """
        present = self.live.get()
        wanted = {s for s in present if not s.startswith(SESSION_PREFIX)} if scope is None else set(scope)
        if session_id is not None:
            wanted.add(session_space(session_id))
        # A space without passages adds nothing but a new graph view to build and cache.
        wanted &= present
        readable = self.principal.read_spaces() if self.principal is not None else None
        if readable is not None:
            # The caller's own session (checked by the session registry) and memories stay readable.
            wanted &= readable | set(owned) | ({session_space(session_id)} if session_id else set())
        return None if wanted == present else frozenset(wanted)
