"""``ScopedMemory`` mirrors every public ``Memory`` method (as httpx's test_exported_members.py
pins its exports): a method added to the engine fails here until the facade serves it too,
or it is listed below with the reason a principal never gets it."""

from __future__ import annotations

import inspect

from hippo.access import ScopedMemory
from hippo.memory import Memory

NOT_SCOPED = {
    "open": "builds a Memory; a ScopedMemory wraps one",
    "close": "the facade does not own the memory it wraps",
    "reading": "the engine's whole derived state, every space in it",
    "store_reads": "store-side sources for any spaces; a principal's recall goes through recall, scoped",
    "load_models": "process start-up: a server loads the models of the memory it wraps before serving",
}
DECIDED = {  # parameters the facade sets from the principal instead of taking them
    "forget": {"spaces"},
    "restore": {"spaces"},
}
FACADE_ONLY = {"session", "clear", "settings"}


def public(cls: type) -> set[str]:
    return {name for name in dir(cls) if not name.startswith("_")}


def test_every_public_memory_method_is_scoped_or_refused_with_a_reason() -> None:
    assert public(Memory) - public(ScopedMemory) == set(NOT_SCOPED)
    assert public(ScopedMemory) - public(Memory) == FACADE_ONLY


def test_scoped_methods_take_the_engines_parameters_and_return_its_types() -> None:
    for name in sorted(public(Memory) - set(NOT_SCOPED)):
        engine, facade = inspect.signature(getattr(Memory, name)), inspect.signature(getattr(ScopedMemory, name))
        wanted = {p: param.kind for p, param in engine.parameters.items() if p not in DECIDED.get(name, set())}
        assert {p: param.kind for p, param in facade.parameters.items()} == wanted, name
        assert facade.return_annotation == engine.return_annotation, name


def test_the_facade_is_typed_without_catch_alls() -> None:
    for name in sorted(public(ScopedMemory) - {"settings"}):
        signature = inspect.signature(getattr(ScopedMemory, name))
        assert signature.return_annotation not in (inspect.Signature.empty, "Any"), name
        for param in list(signature.parameters.values())[1:]:
            assert param.kind is not inspect.Parameter.VAR_KEYWORD, f"{name}(**{param.name})"
            assert param.annotation is not inspect.Parameter.empty and "Any" != param.annotation, \
                f"{name}({param.name})"
