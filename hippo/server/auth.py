"""Who is calling, and which spaces they may read: the one place every read asks.

The principal comes from the API key in the transport headers
(``Authorization: Bearer <key>`` or ``X-API-Key``; keys in ``HIPPO_API_KEYS``
or the store, see ``hippo.access``). A request without a key is anonymous
(may read and write everything) unless keys are required: a key file is
configured, keys were issued into the store, or ``HIPPO_REQUIRE_API_KEY``. Handlers read through
``Context.read_spaces`` and call the engine through ``Context.scoped``
(``hippo.access.ScopedMemory``), which checks every write.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from hippo.access import Principal as Access
from hippo.access import ScopedMemory, admin_principal
from hippo.errors import HippoError
from hippo.keys import KeyRing, key_from_headers
from hippo.memory import Memory
from hippo.memory.walk import graph_spaces
from hippo.spaces import session_space
from hippo.store.base import Spaces

SESSION_PREFIX = "session:"


@dataclass(frozen=True)
class Principal:
    """A caller the transport authenticated. ``spaces`` they may read (None: all)."""

    id: str
    spaces: frozenset[str] | None = None
    access: Access | None = None  # scopes and writable spaces (hippo.access)

    def can_read(self, space: str) -> bool:
        return self.spaces is None or space in self.spaces


ANONYMOUS = admin_principal("anonymous")


class Unauthorized(HippoError):
    """No API key where one is required, or a key no one issued."""


def resolve_principal(headers: Mapping[str, str], keys: KeyRing | None = None, *,
                      required: bool = False) -> Principal | None:
    """The caller behind a request's transport headers; ``None`` (anonymous) may read everything."""
    key = key_from_headers(headers)
    if key is None:
        if required:
            raise Unauthorized("this server needs an API key: send 'Authorization: Bearer <key>' or 'X-API-Key'")
        return None
    access = keys.principal_for_key(key) if keys is not None else None
    if access is None:
        raise Unauthorized("unknown API key")
    return Principal(id=access.user_id, spaces=access.read_spaces(), access=access)


@dataclass
class LiveSpaces:
    """The spaces holding passages in one memory, recomputed only when its state moves."""

    memory: Memory
    key: tuple[int, int] | None = None
    spaces: frozenset[str] = field(default_factory=frozenset)

    def get(self) -> frozenset[str]:
        state = self.memory._current()  # noqa: SLF001 - the snapshot recall reads
        key = (id(state), state.revision)
        if key != self.key:
            self.spaces, self.key = graph_spaces(self.memory), key
        return self.spaces


@dataclass(frozen=True)
class Context:
    """One request's caller. Handlers take every space set they read from here."""

    live: LiveSpaces
    principal: Principal | None = None

    @property
    def owner(self) -> str | None:
        return self.principal.id if self.principal else None

    def may_read(self, space: str) -> bool:
        return self.principal is None or self.principal.can_read(space)

    def scoped(self, memory: Memory, owned: Iterable[str] = ()) -> ScopedMemory:
        """The engine as this caller may use it; ``owned``: spaces of their sessions and built memories."""
        access = self.principal.access if self.principal is not None and self.principal.access else ANONYMOUS
        return ScopedMemory(memory, access.owning(owned))

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
        if self.principal is not None and self.principal.spaces is not None:
            # The caller's own session (checked by the session registry) and memories stay readable.
            wanted &= self.principal.spaces | set(owned) | ({session_space(session_id)} if session_id else set())
        return None if wanted == present else frozenset(wanted)
