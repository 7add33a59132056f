"""``hippo keys``: issue, list and revoke the API keys kept in a store.

A key is printed once, when it is issued; the store keeps only its sha256.
Once a store holds a key, servers on it refuse callers without one.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import typer
from rich.table import Table

from hippo.cli.common import StoreOption, err, fail, out
from hippo.errors import HippoError

keys_app = typer.Typer(no_args_is_help=True, help=__doc__)
T = TypeVar("T")



def _with_keys(store: str | None, work: Callable[[Any], T]) -> T:
    """Run ``work`` on the store's key ring (no models are loaded); errors are one line, exit 2."""
    from hippo.access.keys import KeyRing
    from hippo.config import Settings
    from hippo.store import open_store

    settings = Settings()
    try:
        opened = open_store(store or settings.store)
        try:
            return work(KeyRing.from_settings(settings, opened))
        finally:
            opened.close()
    except HippoError as exc:
        raise fail(str(exc)) from None


def _names(values: list[str] | None) -> list[str]:
    """Repeated and/or comma-separated values: ``--scopes read,write`` or ``--scopes read --scopes write``."""
    return [part.strip() for value in values or [] for part in value.split(",") if part.strip()]


@keys_app.command()
def issue(
    user: Annotated[str, typer.Option(help="the user the key stands for")],
    scopes: Annotated[list[str] | None, typer.Option(help="read, write, forget, admin (comma-separated or "
                                                          "repeated) [default read,write,forget]")] = None,
    group: Annotated[list[str] | None, typer.Option(help="a group of the user (repeat)")] = None,
    read: Annotated[list[str] | None, typer.Option(help="another space the key may read (repeat)")] = None,
    write: Annotated[list[str] | None, typer.Option(help="another space the key may write (repeat)")] = None,
    label: Annotated[str | None, typer.Option(help="a note kept with the key (who, what for)")] = None,
    store: StoreOption = None,
) -> None:
    """Issue a key: printed once on stdout; the store keeps only its hash."""
    from hippo.access import DEFAULT_SCOPES
    from hippo.access.keys import key_hash

    key = _with_keys(store, lambda ring: ring.issue(user, scopes=_names(scopes) or sorted(DEFAULT_SCOPES),
                                                    groups=_names(group), read=_names(read), write=_names(write),
                                                    label=label))
    out.print(key, highlight=False, markup=False)
    err.print(f"key {key_hash(key)[:12]} for {user}: shown once; only its sha256 is stored", highlight=False)


@keys_app.command("list")
def list_keys(store: StoreOption = None,
              as_json: Annotated[bool, typer.Option("--json", help="print JSON instead of a table")] = False) -> None:
    """Every key (store and key file): id, user, groups, scopes, spaces, label. Never the key itself."""
    rows = _with_keys(store, lambda ring: [{"id": r.key_id, "kept": kept, "user": r.user, "groups": r.groups,
                                            "scopes": r.scopes, "read": r.read, "write": r.write,
                                            "label": r.label, "created_at": r.created_at}
                                           for kept, r in ring.records()])
    if as_json:
        out.print_json(json.dumps(rows))
        return
    table = Table(show_edge=False)
    for column in ("id", "kept", "user", "groups", "scopes", "read", "write", "label", "created_at"):
        table.add_column(column)
    for row in rows:
        table.add_row(*(", ".join(v) if isinstance(v, list) else (v or "") for v in row.values()))
    out.print(table)


@keys_app.command()
def revoke(key: Annotated[str, typer.Argument(help="the key, its sha256, or its id from 'hippo keys list'")],
           store: StoreOption = None) -> None:
    """Revoke a store key: it stops working at once, on every server of the store."""
    if not _with_keys(store, lambda ring: ring.revoke(key)):
        raise fail(f"no key {key!r} in the store (file keys are removed from the file)")
    err.print("revoked", highlight=False)
