"""Built memories: named, persisted scopes of the graph that ``memory/recall`` reads.

A memory is derived data: the graph itself is the memory's content, so a
record only says which spaces it covers, where new documents for it go, and
the size of its textual form when last built. Records live in the store's
key-value area (namespace ``rcp.memories``), one key per memory and one
"latest" pointer per owner (and session), so ``memoryId`` survives restarts,
is shared by every server on the same store, and no call reads or rewrites
more than its own keys.

- global, built without documents: the live index (every space but sessions');
- global, built with documents: its own space ``memory:<id>``;
- session: the session's space ``session:<id>`` (with the live index when
  built without documents).

``tokens`` is the size of the textual form a reader of the memory can reach:
one line per entity name and one per fact ("subject predicate object"),
counted with ``hippo.text.approx_tokens`` (ceil(characters / 4) per line), the
same estimate ``tokenBudget`` counts in.
"""

from __future__ import annotations

import json
import secrets
import threading
from collections import OrderedDict
from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from hippo.api.rcp.context import Context
from hippo.api.rcp.errors import not_found
from hippo.store import Store

NAMESPACE = "rcp.memories"
LATEST = "latest"  # key prefix: an owner's most recently built memory, per scope (see ``latest_key``)
LEGACY_INDEX = "_index"  # one list of every memory id, rewritten by every build (before per-owner keys)
CACHE_SIZE = 4096


class MemoryRecord(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    id: str
    scope: Literal["global", "session"]
    spaces: list[str] | None  # None: the live index
    home: str  # the space documents built into this memory go to
    session_id: str | None = None
    owner: str | None = None
    revision: int = 0
    tokens: int = 0
    entities: int = 0
    facts: int = 0
    created_at: str
    updated_at: str


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


def new_memory_id() -> str:
    return f"mem-{secrets.token_hex(8)}"


def latest_key(owner: str | None, session_id: str | None = None) -> str:
    """The key of an owner's latest memory: global, or of one session. JSON keeps the parts apart
    (an owner id may hold any character)."""
    return f"{LATEST}:{json.dumps([owner, session_id])}"


class MemoryRegistry:
    """Memory records by id, and per owner a pointer to their latest one: every call reads a
    fixed number of keys, however many memories the store holds (``benchmarks/memories.py``)."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._cache: OrderedDict[str, MemoryRecord] = OrderedDict()
        self._lock = threading.Lock()
        self._migrate()

    def _read(self, ids: list[str]) -> list[MemoryRecord]:
        with self._lock:
            missing = [i for i in ids if i not in self._cache]
        found = {key: MemoryRecord.model_validate(json.loads(value))
                 for key, value in self._store.get_values(NAMESPACE, missing).items()} if missing else {}
        with self._lock:
            for key, record in found.items():
                self._remember(record)
            return [self._cache[i] for i in ids if i in self._cache]

    def _remember(self, record: MemoryRecord) -> None:
        self._cache[record.id] = record
        self._cache.move_to_end(record.id)
        while len(self._cache) > CACHE_SIZE:
            self._cache.popitem(last=False)

    def get(self, memory_id: str, ctx: Context) -> MemoryRecord:
        """The memory, or NotFound (-32015), also for one another caller owns."""
        found = self._read([memory_id])
        if not found or found[0].owner != ctx.owner:
            raise not_found("memoryId", memory_id, "memory")
        return found[0]

    def latest(self, ctx: Context, session_id: str | None = None) -> MemoryRecord | None:
        """The caller's most recently built memory: the session's own first, else a global one."""
        keys = [latest_key(ctx.owner, session_id)] if session_id else []
        keys.append(latest_key(ctx.owner))
        pointers = self._store.get_values(NAMESPACE, keys)
        for key in keys:
            if key in pointers:
                found = self._read([pointers[key]])
                if found and found[0].owner == ctx.owner:
                    return found[0]
        return None

    def save(self, record: MemoryRecord) -> None:
        """Write the record and its owner's latest pointer in one atomic put."""
        with self._lock:
            self._store.put_values(NAMESPACE, {record.id: record.model_dump_json(by_alias=True),
                                               latest_key(record.owner, record.session_id): record.id})
            self._remember(record)

    def _migrate(self) -> None:
        """Stores written before per-owner pointers kept one list of every memory: point each
        owner at their latest memory once, then drop the list."""
        legacy = self._store.get_values(NAMESPACE, [LEGACY_INDEX]).get(LEGACY_INDEX)
        if legacy is None:
            return
        latest: dict[str, MemoryRecord] = {}
        for raw in self._store.get_values(NAMESPACE, json.loads(legacy)).values():
            record = MemoryRecord.model_validate(json.loads(raw))
            key = latest_key(record.owner, record.session_id)
            if key not in latest or record.updated_at > latest[key].updated_at:
                latest[key] = record
        self._store.put_values(NAMESPACE, {**{key: r.id for key, r in latest.items()}, LEGACY_INDEX: None})
