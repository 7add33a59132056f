"""Statement parameters as the driver is handed them: lists it does not format for a log line.

The driver formats every RUN's parameters with ``repr`` for its debug log whether or not anything
logs at that level (neo4j 6.4, ``Bolt5x5.run``). A store-side recall sends query vectors (768 floats
for a search and its floor) and frontiers of a few hundred owners in each of ~25 statements, and a
write sends rows by the thousand: formatted, a 768-float vector cost a statement 2.2 ms of the client's time
against 0.8 unformatted (``results/store_read-stop63.md``). A list named by its length packs
exactly as a list (the packer takes list subclasses), so nothing else changes. ``Connection`` hands
every statement's parameters over this way: its reads directly, its transactions' statements through
``UnloggedTransaction``.
"""

from __future__ import annotations

from typing import Any


class Unlogged(list):  # type: ignore[type-arg]
    """A list whose ``repr`` is its length."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"[{len(self)} items]"


def unlogged(params: dict[str, Any]) -> dict[str, Any]:
    """``params`` with each list value an ``Unlogged`` one (its items are never formatted on their own)."""
    return {key: Unlogged(value) if type(value) is list else value for key, value in params.items()}


class UnloggedTransaction:
    """A driver transaction whose statements' lists go to the driver unformatted (``unlogged``)."""

    def __init__(self, tx: Any) -> None:
        self._tx = tx

    def run(self, query: str, parameters: dict[str, Any] | None = None, **kwargs: Any) -> Any:
        return self._tx.run(query, unlogged({**(parameters or {}), **kwargs}))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tx, name)
