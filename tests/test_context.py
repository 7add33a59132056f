"""The user-context block: slots, dedupe, budgets, the recall marker, caching with write-through."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from hippo import InvalidInput, Memory
from hippo.access import ScopedMemory, derive_principal
from hippo.errors import AccessDenied
from hippo.memory.context import (
    HEADER,
    MORE,
    EntityNote,
    Note,
    classify_by_rules,
    collapse_entities,
    context,
    dedupe_notes,
    fill_slots,
    render,
)
from hippo.text import approx_tokens

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(("text", "slot"), [
    ("My name is Dana Okafor and I live in Lisbon.", "identity"),
    ("I'm a data engineer by profession.", "identity"),
    ("Dana is working on the Atlas migration project.", "work"),
    ("You drafted the Q3 report for her; she liked the charts.", "work"),
    ("She wants to run a marathon by next spring.", "goals"),
    ("Dana enjoys Baroque music and sailing.", "interests"),
    ("Her manager is Priya; my colleague Tom reviews the code.", "relationships"),
    ("Asked about the weather in Porto yesterday.", "recent"),
])
def test_the_keyword_classifier(text: str, slot: str):
    assert classify_by_rules(text) == slot


def test_notes_dedupe_by_normalized_text_keeping_paraphrases():
    notes = [Note("Dana likes tea.", T0), Note("dana  LIKES tea", T0 + timedelta(days=1)),
             Note("Dana prefers tea to coffee.", T0)]
    kept = dedupe_notes(notes)
    assert len(kept) == 2
    assert any(n.created_at == T0 + timedelta(days=1) for n in kept), "the newest copy of a repeat is kept"


def test_entities_collapse_by_name_keeping_the_richest_summary():
    collapsed = collapse_entities([
        EntityNote("Priya Shah", "PERSON", ("Priya Shah manages Dana",)),
        EntityNote("priya shah", "PERSON", ("Priya Shah manages Dana", "Priya Shah leads Atlas", "priya shah leads atlas")),
        EntityNote("Acme", "ORG", ()),
    ])
    assert len(collapsed) == 2
    priya = next(e for e in collapsed if e.name.lower() == "priya shah")
    assert priya.facts == ("Priya Shah manages Dana", "Priya Shah leads Atlas"), "richest, and its own facts deduped"


def test_each_text_appears_once_across_slots():
    lines = fill_slots([Note("Dana enjoys sailing."), Note("dana enjoys sailing!")],
                       [EntityNote("Dana enjoys sailing", "PERSON")])
    assert sum(len(v) for v in lines.values()) == 1


def test_an_llm_classifier_decides_and_bad_answers_fall_back():
    answers = {"a note": "goals", "other note": "not a slot"}
    lines = fill_slots([Note("a note"), Note("other note")], [], classify=lambda t: answers[t])
    assert lines["goals"] == ["a note"] and lines["recent"] == ["other note"]


def test_render_caps_and_marks_what_it_trims():
    notes = [Note(f"Dana is working on project number {i} with a long description of its aims.",
                  T0 + timedelta(minutes=i)) for i in range(40)]
    lines = fill_slots(notes, [])
    block = render(lines, budget_tokens=150, slot_tokens=120)
    assert block.startswith(HEADER) and block.rstrip().endswith(MORE)
    assert approx_tokens(block) <= 150 + 5  # newlines joined between parts
    assert "project number 39" in block, "best (newest) first"
    roomy = render(fill_slots(notes[:2], []), budget_tokens=1000, slot_tokens=1000)
    assert MORE not in roomy and "project number 1" in roomy and "project number 0" in roomy
    assert render(fill_slots([], []), budget_tokens=1000, slot_tokens=1000) == ""


def test_slot_cap_leaves_room_for_other_slots():
    notes = [Note(f"Dana is working on task {i} for the client.") for i in range(30)] + [
        Note("My name is Dana."), Note("Dana wants to learn Rust.")]
    block = render(fill_slots(notes, []), budget_tokens=400, slot_tokens=60)
    assert "### Identity" in block and "### Goals" in block and "### Work" in block and MORE in block


# --- on a real memory --------------------------------------------------------------------------------


@pytest.fixture
def dana(open_memory: Callable[..., Memory]) -> ScopedMemory:
    return ScopedMemory(open_memory(), derive_principal("dana"))


def test_context_block_from_the_users_space(dana: ScopedMemory):
    assert dana.context() == "", "nothing known: no block"
    for text in ["My name is Dana Okafor and I live in Lisbon.",
                 "Dana is working on the Atlas migration project at Northwind Traders.",
                 "Dana wants to run the Lisbon marathon by next spring.",
                 "Dana enjoys Baroque music.",
                 "Dana's manager Priya Shah reviews the Atlas plan every Friday."]:
        dana.remember(text)
    dana.remember("My name is Dana Okafor and I live in Lisbon.", custom_id="dup")  # same text, other memory
    block = dana.context()
    assert block.startswith(HEADER)
    for heading, text in [("Identity", "Lisbon."), ("Work", "Atlas migration"), ("Goals", "marathon"),
                          ("Interests", "Baroque"), ("Relationships", "Priya Shah")]:
        section = block.split(f"### {heading}")[1].split("###")[0]
        assert text in section, (heading, block)
    assert block.count("My name is Dana Okafor") == 1, "deduped by normalized text"
    relationships = block.split("### Relationships")[1].split("###")[0]
    assert "**Dana" not in relationships, "the user is not their own relationship"
    assert MORE not in block


def test_a_write_shows_in_the_next_call_and_reads_are_cached(dana: ScopedMemory, monkeypatch):
    dana.remember("Dana enjoys chess.")
    first = dana.context()
    calls = []
    original = dana.memory.memories
    monkeypatch.setattr(dana.memory, "memories", lambda **kw: calls.append(kw) or original(**kw))
    assert dana.context() == first and calls == [], "an unchanged store is served from the cache"
    dana.remember("Dana enjoys go, the board game.")
    assert "board game" in dana.context() and len(calls) == 1
    forgotten = dana.memories()[0].uid
    dana.forget(forgotten)
    assert "board game" not in dana.context()


def test_budget_trims_with_the_marker(dana: ScopedMemory):
    for i in range(30):
        dana.remember(f"Dana is working on ticket {i} of the billing project.")
    block = dana.context(budget_tokens=120)
    assert MORE in block and approx_tokens(block) <= 125
    assert "ticket 29" in block


def test_context_of_another_user_needs_read_access(dana: ScopedMemory):
    dana.remember("Dana enjoys chess.")
    eve = ScopedMemory(dana.memory, derive_principal("eve"))
    with pytest.raises(AccessDenied, match="may not read space 'user:dana'"):
        eve.context("dana")
    assert eve.context() == ""
    with pytest.raises(InvalidInput, match="^budget_tokens: "):
        context(dana.memory, "dana", budget_tokens=5)
