"""What every ``hippo`` subcommand module shares: the consoles, the ``--store`` option and the
one-line failure (exit code 2)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console

out = Console()
err = Console(stderr=True)

StoreOption = Annotated[str | None, typer.Option("--store", "-s", help="SQLite path, :memory: or neo4j:// URL "
                                                                        "[env HIPPO_STORE, default hippo.db]")]


def fail(message: str) -> typer.Exit:
    """Print ``error: message`` on stderr, unwrapped; the caller raises what this returns."""
    err.print(f"[red]error:[/red] {message}", highlight=False, soft_wrap=True)
    return typer.Exit(2)
