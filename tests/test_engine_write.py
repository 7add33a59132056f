"""The engine's one write protocol: plan on the current state, commit, plan again on a conflict."""

from __future__ import annotations

import pytest

from hippo.errors import Conflict, InvalidInput
from hippo.memory.core import Planned
from hippo.memory.state import DerivedState
from hippo.models import DocumentRecord
from hippo.store import WriteBatch


def _titled(title: str, version: int, expected: int) -> WriteBatch:
    record = DocumentRecord(id="doc:w", title=title, space="org", version=version)
    return WriteBatch(documents=[record], expect_versions={"doc:w": expected})


def test_a_conflicting_plan_is_planned_again_on_the_state_after_it(open_memory):
    memory = open_memory()
    engine = memory.engine
    engine.write(lambda state: Planned(_titled("first", 1, 0), lambda revision: revision))
    seen: list[int] = []

    def plan(state: DerivedState) -> Planned[str]:
        seen.append(state.revision)
        stale = len(seen) == 1  # as if planned before another writer moved doc:w to version 1
        return Planned(_titled("second", 2, 0 if stale else 1), lambda revision: f"written at {revision}")

    assert engine.write(plan, deadline=0.0) == f"written at {seen[0] + 1}"
    assert len(seen) == 2 and seen[0] == seen[1], "the refused attempt wrote nothing"
    assert memory.store.documents(["doc:w"])[0].title == "second"


def test_a_write_that_keeps_conflicting_gives_up_naming_what_changed(open_memory):
    memory = open_memory()
    engine = memory.engine
    before = memory.store.revision()
    attempts = []

    def plan(state: DerivedState) -> Planned[None]:
        attempts.append(state.revision)
        return Planned(_titled("never", 1, 7), lambda revision: None)

    with pytest.raises(Conflict, match="doc:w kept changing under concurrent writers \\(3 attempts\\)"):
        engine.write(plan, attempts=3, deadline=0.0, what="doc:w")
    with pytest.raises(Conflict, match="is at version 0, not 7"):  # without a name: the store's own refusal
        engine.write(plan, attempts=2, deadline=0.0)
    assert len(attempts) == 5 and memory.store.revision() == before


def test_a_plan_that_refuses_is_not_retried_and_a_dry_plan_writes_nothing(open_memory):
    memory = open_memory()
    engine = memory.engine
    before = memory.store.revision()
    calls = []

    def refuse(state: DerivedState) -> Planned[None]:
        calls.append(1)
        raise InvalidInput("text", "is empty")

    with pytest.raises(InvalidInput):
        engine.write(refuse)
    assert engine.write(lambda state: Planned(None, lambda revision: revision)) == before
    assert calls == [1] and memory.store.revision() == before
