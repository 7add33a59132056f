"""Built memories: named, persisted scopes of the graph that ``memory/recall`` reads.

A memory is derived data: the graph itself is the memory's content, so a
record only says which spaces it covers, where new documents for it go, and
the size of its textual form when last built. Records live in the store's
key-value area (namespace ``rcp.memories``), so ``memoryId`` survives restarts
and is shared by every server on the same store.

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
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from hippo.memory import Memory
from hippo.memory.walk import view_records
from hippo.server.auth import Context
from hippo.server.errors import not_found
from hippo.store import Store
from hippo.store.base import Spaces
from hippo.text import approx_tokens

NAMESPACE = "rcp.memories"
INDEX_KEY = "_index"  # every memory id, for "the latest memory" without a memoryId


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


@dataclass(frozen=True)
class TextForm:
    tokens: int
    entities: int
    facts: int


def text_form(memory: Memory, spaces: Spaces) -> TextForm:
    """Entities and facts a reader of ``spaces`` reaches, and their size in tokens."""
    records = view_records(memory, spaces)
    names = [e.name for e in memory.store.entities(records.entity_ids)]
    facts = [f.text for f in memory.store.facts(records.fact_ids)]
    return TextForm(tokens=sum(approx_tokens(t) for t in names) + sum(approx_tokens(t) for t in facts),
                    entities=len(names), facts=len(facts))


class MemoryRegistry:
    def __init__(self, store: Store) -> None:
        self._store = store
        self._cache: dict[str, MemoryRecord] = {}
        self._lock = threading.Lock()

    def _read(self, ids: list[str]) -> list[MemoryRecord]:
        missing = [i for i in ids if i not in self._cache]
        if missing:
            for key, value in self._store.get_values(NAMESPACE, missing).items():
                record = MemoryRecord.model_validate(json.loads(value))
                with self._lock:
                    self._cache[key] = record
        return [self._cache[i] for i in ids if i in self._cache]

    def get(self, memory_id: str, ctx: Context) -> MemoryRecord:
        """The memory, or NotFound (-32015), also for one another caller owns."""
        found = self._read([memory_id])
        if not found or found[0].owner != ctx.owner:
            raise not_found("memoryId", memory_id, "memory")
        return found[0]

    def latest(self, ctx: Context, session_id: str | None = None) -> MemoryRecord | None:
        """The caller's most recently built memory: the session's own first, else a global one."""
        ids = json.loads(self._store.get_values(NAMESPACE, [INDEX_KEY]).get(INDEX_KEY, "[]"))
        mine = [r for r in self._read(ids) if r.owner == ctx.owner]
        for wanted in ([r for r in mine if session_id and r.session_id == session_id],
                       [r for r in mine if r.scope == "global"]):
            if wanted:
                return max(wanted, key=lambda r: r.updated_at)
        return None

    def save(self, record: MemoryRecord) -> None:
        """Write the record and the id index in one atomic put."""
        with self._lock:
            ids = json.loads(self._store.get_values(NAMESPACE, [INDEX_KEY]).get(INDEX_KEY, "[]"))
            if record.id not in ids:
                ids.append(record.id)
            self._store.put_values(NAMESPACE, {record.id: record.model_dump_json(by_alias=True),
                                               INDEX_KEY: json.dumps(ids)})
            self._cache[record.id] = record
