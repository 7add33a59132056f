"""Sessions over RCP: an agent's trajectory. Each remembers what it already returned, for dedup across turns.

A session is opened by ``memory/build {scope: "session"}``; its passages live
in the space ``session:<id>``. Who owns it is ``hippo.access``'s one session
registry (persisted, so a ``sessionId`` survives a restart and no other way in
can claim it); what a session already returned is kept in process, bounded
per session.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from hippo.access.sessions import SessionRecord, SessionRegistry
from hippo.api.rcp.context import Context
from hippo.api.rcp.errors import not_found
from hippo.api.rcp.wire import tokens
from hippo.models import Hit
from hippo.store import Store

MAX_REMEMBERED = 100_000  # returned ids kept per session; the oldest go first


@dataclass
class Session:
    id: str
    owner: str | None
    created_at: str
    _returned: OrderedDict[str, None] = field(default_factory=OrderedDict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def of(cls, record: SessionRecord) -> Session:
        return cls(id=record.id, owner=record.owner, created_at=record.created_at)

    def returned(self) -> set[str]:
        with self._lock:
            return set(self._returned)

    def remember(self, ids: Iterable[str]) -> None:
        with self._lock:
            for pid in ids:
                self._returned[pid] = None
                self._returned.move_to_end(pid)
            while len(self._returned) > MAX_REMEMBERED:
                self._returned.popitem(last=False)


class Sessions:
    """The RCP sessions this server has seen, with what each already returned."""

    def __init__(self, store: Store) -> None:
        self.registry = SessionRegistry(store)
        self._sessions: dict[str, Session] = {}
        self._lock = threading.Lock()

    def create(self, ctx: Context) -> Session:
        session = Session.of(self.registry.create(ctx.owner))
        with self._lock:
            self._sessions[session.id] = session
        return session

    def get(self, session_id: str, ctx: Context, field_name: str = "sessionId") -> Session:
        """The session, or NotFound (-32015): also for one another caller owns, whose id is never confirmed."""
        with self._lock:
            session = self._sessions.get(session_id)
        if session is None:
            record = self.registry.get(session_id)
            if record is not None:
                with self._lock:
                    session = self._sessions.setdefault(session_id, Session.of(record))
        if session is None or session.owner != ctx.owner:
            raise not_found(field_name, session_id, "session")
        return session


def select(hits: Iterable[Hit], *, k: int, token_budget: int | None = None,
           keep: Callable[[Hit], bool] = lambda _: True, seen: set[str] | None = None) -> list[Hit]:
    """The best ``k`` hits that pass ``keep`` and were not ``seen``, within ``token_budget``.

    Hits come best first; the first one that does not fit the budget ends the
    list, so a hit is never dropped in favour of a worse one (as the engine does).
    """
    chosen: list[Hit] = []
    used = 0
    for h in hits:
        if (seen is not None and h.id in seen) or not keep(h):
            continue
        cost = tokens(h.text)
        if token_budget is not None and used + cost > token_budget:
            break
        used += cost
        chosen.append(h)
        if len(chosen) == k:
            break
    return chosen
