"""The user-context block: what an agent should know about a user before turn one.

Six slots, in this order: ``identity`` (name, role, background), ``work``
(projects, responsibilities, what was made for them), ``goals``,
``interests``, ``relationships`` (people and organizations) and ``recent``
(everything else, newest first). Each memory in ``user:<id>`` goes to one
slot: a keyword classifier offline, or any callable (an LLM) given as
``classify``. People and organizations the user's memories mention join
``relationships`` with the facts read about them.

The block is deduplicated (memories by normalized text, entities by name
keeping the richest summary) and budgeted (per slot and whole block); when a
cap trims anything it ends with a marker pointing at recall. It is cached per
user and keyed on the store revision, so a write shows in the next call.
"""

from __future__ import annotations

import re
import threading
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol, get_args

from hippo.config import Settings
from hippo.errors import InvalidInput
from hippo.memory.core import Engine
from hippo.memory.walk import view_records
from hippo.models import MemoryItem
from hippo.spaces import user_space
from hippo.store import Store
from hippo.text import approx_tokens, normalize

Slot = Literal["identity", "work", "goals", "interests", "relationships", "recent"]
SLOTS: tuple[Slot, ...] = get_args(Slot)
TITLES: dict[Slot, str] = {
    "identity": "Identity", "work": "Work", "goals": "Goals", "interests": "Interests",
    "relationships": "Relationships", "recent": "Recent",
}
HEADER = "## What you know about the user"
MORE = "_(More remembered — ask me to recall.)_"
MAX_NOTES = 2_000  # memories read per block; the block shows a few dozen at most
RELATION_TYPES = frozenset({"PERSON", "ORG"})
SUMMARY_FACTS = 4  # facts kept in one entity's summary line

Classifier = Callable[[str], str | None]
"""Text of one memory -> a slot name (None or an unknown name: the keyword rules decide)."""


# --- classification --------------------------------------------------------------------

def _words(*phrases: str) -> re.Pattern[str]:
    return re.compile(r"\b(?:" + "|".join(phrases) + r")\b", re.IGNORECASE)


# First match wins, so the specific slots come before identity's broad "I am".
_RULES: tuple[tuple[Slot, re.Pattern[str]], ...] = (
    ("goals", _words(r"goals?", r"want(?:s)? to", r"would like to", r"plan(?:s|ning)? to", r"hop(?:e|es|ing) to",
                     r"aim(?:s|ing)? to", r"trying to", r"objectives?", r"priorit(?:y|ies)", r"aspir\w+",
                     r"dream(?:s)? (?:of|to)", r"intend(?:s)? to", r"target(?:s)?", r"by (?:next|the end of)")),
    ("relationships", _words(
        r"(?:my|his|her|their|\w+'s) (?:wife|husband|partner|spouse|son|daughter|kids?|children|mother|mom|mum|"
        r"father|dad|sister|brother|friend|boss|manager|colleague|co-?worker|mentor|team ?mates?|client|"
        r"cofounder|co-founder)",
        r"married to", r"reports? to", r"works? with", r"friends? with", r"(?:his|her|their) name is")),
    ("work", _words(r"work(?:s|ing|ed)? (?:on|at|for)", r"projects?", r"jobs?", r"deadlines?", r"sprints?",
                    r"clients?", r"customers?", r"employer", r"deliverables?", r"meetings?", r"roadmap",
                    r"(?:you|we) (?:made|wrote|built|created|drafted|designed)", r"drafts?", r"reports?",
                    r"launch(?:ed|ing)?", r"ship(?:ped|ping)?", r"repo(?:sitory)?", r"codebase")),
    ("interests", _words(r"interested in", r"interests?", r"enjoy(?:s|ed)?", r"loves?", r"likes?",
                         r"fan of", r"hobb(?:y|ies)", r"passionate", r"favou?rite", r"into", r"prefers?",
                         r"fascinated", r"reads? about", r"plays?")),
    ("identity", _words(r"my name", r"i am", r"i'm", r"call me", r"i live", r"lives? in", r"born",
                        r"years old", r"pronouns?", r"i come from", r"grew up", r"background", r"studied",
                        r"degree", r"speaks?", r"native", r"work(?:s|ed)? as", r"by profession", r"nationality",
                        r"based in")),
)


def classify_by_rules(text: str) -> Slot:
    """The offline classifier: the first slot whose keywords the text contains, else ``recent``."""
    for slot, pattern in _RULES:
        if pattern.search(text):
            return slot
    return "recent"


def _slot_of(text: str, classify: Classifier | None) -> Slot:
    if classify is not None:
        answer = classify(text)
        if isinstance(answer, str) and answer.strip().lower() in SLOTS:
            return answer.strip().lower()  # type: ignore[return-value]
    return classify_by_rules(text)


# --- what the block is made of -----------------------------------------------------------


@dataclass(frozen=True)
class Note:
    """One remembered item as the block sees it."""

    text: str
    created_at: datetime | None = None
    salience: float | None = None


@dataclass(frozen=True)
class EntityNote:
    """A person or organization, with the facts read about them."""

    name: str
    type: str
    facts: tuple[str, ...] = ()

    @property
    def summary(self) -> str:
        return "; ".join(self.facts)

    def line(self) -> str:
        return f"**{self.name}** — {self.summary}" if self.facts else f"**{self.name}**"


def text_key(text: str) -> str:
    """Normalized text: case, punctuation and spacing do not make a fact new."""
    return normalize(text)


def dedupe_notes(notes: Iterable[Note]) -> list[Note]:
    """One note per normalized text, the newest copy kept (paraphrases survive)."""
    best: dict[str, Note] = {}
    for note in notes:
        key = text_key(note.text)
        if not key:
            continue
        kept = best.get(key)
        if kept is None or (note.created_at or datetime.min) > (kept.created_at or datetime.min):
            best[key] = note
    return list(best.values())


def collapse_entities(entities: Iterable[EntityNote]) -> list[EntityNote]:
    """One entity per normalized name, keeping the richest summary (most facts, then longest)."""
    best: dict[str, EntityNote] = {}
    for entity in entities:
        key = text_key(entity.name)
        if not key:
            continue
        unique: dict[str, str] = {}
        for fact in entity.facts:
            if text_key(fact):
                unique.setdefault(text_key(fact), fact)
        facts = tuple(unique.values())
        entity = EntityNote(entity.name, entity.type, facts)
        kept = best.get(key)
        if kept is None or (len(entity.facts), len(entity.summary)) > (len(kept.facts), len(kept.summary)):
            best[key] = entity
    return list(best.values())


def _order(note: Note) -> tuple[float, float]:
    salience = 0.5 if note.salience is None else note.salience
    stamp = note.created_at.timestamp() if note.created_at else 0.0
    return (-salience, -stamp)


_SELF_NAME = re.compile(r"\b(?i:my name is|call me|i am called|i'm called)\s+((?:[A-Z][\w'-]*\s?){1,4})")


def self_names(notes: Iterable[Note], user_id: str = "") -> set[str]:
    """Normalized names the user goes by: their id and what follows "my name is"."""
    names = {normalize(user_id)} if user_id else set()
    for note in notes:
        names.update(normalize(m.group(1)) for m in _SELF_NAME.finditer(note.text))
    return {n for n in names if n}


def _is_self(name: str, selves: set[str]) -> bool:
    """"Dana" and "Dana Okafor" are the user when the user is Dana Okafor."""
    words = normalize(name).split()
    return bool(words) and any(words == s.split()[: len(words)] for s in selves)


def fill_slots(notes: Iterable[Note], entities: Iterable[EntityNote], classify: Classifier | None = None,
               user_id: str = "") -> dict[Slot, list[str]]:
    """Lines per slot, best first, every normalized text at most once across the block.

    The user is not their own relationship: entities named like them are left out.
    """
    notes = list(notes)
    selves = self_names(notes, user_id)
    slots: dict[Slot, list[Note]] = {slot: [] for slot in SLOTS}
    for note in dedupe_notes(notes):
        slots[_slot_of(note.text, classify)].append(note)
    lines: dict[Slot, list[str]] = {}
    seen: set[str] = set()
    for slot in SLOTS:
        ordered = sorted(slots[slot], key=lambda n: (-(n.created_at.timestamp() if n.created_at else 0.0),)) \
            if slot == "recent" else sorted(slots[slot], key=_order)
        lines[slot] = []
        for note in ordered:
            key = text_key(note.text)
            if key not in seen:
                seen.add(key)
                lines[slot].append(" ".join(note.text.split()))
    others = [e for e in collapse_entities(entities) if not _is_self(e.name, selves)]
    for entity in sorted(others, key=lambda e: -len(e.facts)):  # the ones we know most about first
        key = text_key(entity.line())
        if key not in seen:
            seen.add(key)
            lines["relationships"].append(entity.line())
    return lines


def render(lines: dict[Slot, list[str]], *, budget_tokens: int, slot_tokens: int) -> str:
    """The Markdown block within both caps; empty when no slot has a line.

    Lines go in slot order; a line that does not fit its slot's cap or what is
    left of the whole budget is left out (later, shorter lines may still fit),
    and any omission adds the recall marker. The marker's cost is reserved up
    front so the block never exceeds ``budget_tokens``.
    """
    if not any(lines.values()):
        return ""
    parts = [HEADER]
    used = approx_tokens(HEADER) + approx_tokens(MORE)
    trimmed = False
    for slot in SLOTS:
        heading = f"\n### {TITLES[slot]}"
        slot_used = 0
        taken: list[str] = []
        for line in lines.get(slot, []):
            bullet = f"- {line}"
            cost = approx_tokens(bullet)
            extra = cost + (0 if taken else approx_tokens(heading))
            if slot_used + cost > slot_tokens or used + extra > budget_tokens:
                trimmed = True
                continue
            taken.append(bullet)
            slot_used += cost
            used += extra
        if taken:
            parts.append(heading)
            parts.extend(taken)
    if len(parts) == 1:
        return ""  # everything was trimmed: nothing to show at this budget
    if trimmed:
        parts.append(f"\n{MORE}")
    return "\n".join(parts) + "\n"


# --- reading a user's space ------------------------------------------------------------------


class UserMemories(Protocol):
    """What the block reads: a ``Memory`` (its remembered items, its store and its engine)."""

    settings: Settings
    store: Store
    engine: Engine

    def memories(self, *, spaces: Iterable[str] | None = None, live: bool = True,
                 limit: int = 1000) -> list[MemoryItem]: ...


def _notes(memory: UserMemories, space: str) -> list[Note]:
    items = memory.memories(spaces=[space], live=True, limit=MAX_NOTES)
    return [Note(text=item.text, created_at=item.created_at, salience=item.salience) for item in items]


def _entities(memory: UserMemories, space: str) -> list[EntityNote]:
    """People and organizations mentioned in ``space``, with the facts of that space about them.

    Reads the graph as a reader of that one space sees it, so nothing from any
    other space (not even a shared entity's facts elsewhere) comes in.
    """
    readers = frozenset({space})
    records = view_records(memory.engine, readers)
    people = {e.id: e for e in memory.store.entities(records.entity_ids) if e.type in RELATION_TYPES}
    with memory.engine.source(readers) as source:  # names as this space's own passages spell them
        names = source.entity_names(list(people))
    if not people:
        return []
    about: dict[str, list[str]] = {eid: [] for eid in people}
    for fact in memory.store.facts(records.fact_ids):
        for eid in (fact.subject_id, fact.object_id):
            if eid in about and len(about[eid]) < SUMMARY_FACTS:
                about[eid].append(fact.text)
    return [EntityNote(names.get(eid, e.key), e.type, tuple(about[eid])) for eid, e in people.items()]


@dataclass
class _Cache:
    lock: threading.Lock = field(default_factory=threading.Lock)
    blocks: dict[tuple[Any, ...], tuple[int, str]] = field(default_factory=dict)


_CACHES: weakref.WeakKeyDictionary[Any, _Cache] = weakref.WeakKeyDictionary()
_CACHES_LOCK = threading.Lock()


def _cache(memory: UserMemories) -> _Cache:
    with _CACHES_LOCK:
        cache = _CACHES.get(memory)
        if cache is None:
            cache = _CACHES[memory] = _Cache()
        return cache


def context(memory: UserMemories, user_id: str, *, budget_tokens: int | None = None, slot_tokens: int | None = None,
            classify: Classifier | None = None) -> str:
    """The user-context block of ``user_id`` as Markdown, or ``""`` when nothing is known.

    Access is not checked here: go through ``hippo.access.ScopedMemory.context``
    to serve a principal.
    """
    settings = memory.settings
    budget = settings.context_budget_tokens if budget_tokens is None else budget_tokens
    per_slot = settings.context_slot_tokens if slot_tokens is None else slot_tokens
    for name, value in (("budget_tokens", budget), ("slot_tokens", per_slot)):
        if not isinstance(value, int) or isinstance(value, bool) or not 20 <= value <= 100_000:
            raise InvalidInput(name, f"must be an integer from 20 to 100000, got {value!r}", limit=100_000)
    space = user_space(user_id)
    key = (user_id, budget, per_slot, classify)
    cache = _cache(memory)
    revision = memory.store.revision()
    with cache.lock:
        hit = cache.blocks.get(key)
    if hit is not None and hit[0] == revision:
        return hit[1]
    block = render(fill_slots(_notes(memory, space), _entities(memory, space), classify, user_id),
                   budget_tokens=budget, slot_tokens=per_slot)
    with cache.lock:
        cache.blocks[key] = (revision, block)
    return block
