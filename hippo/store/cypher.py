"""Cypher statements live in ``hippo/cypher/<name>.cypher`` (package data), not in Python strings."""

from __future__ import annotations

import os
import re
from functools import cache
from pathlib import Path

from hippo.errors import StoreError

__all__ = ["cypher", "cypher_dir", "cypher_statements", "statement_at"]


def cypher_dir() -> Path:
    """``hippo/cypher/``, shipped inside the package (``HIPPO_CYPHER_DIR`` overrides, e.g. to try edits)."""
    override = os.environ.get("HIPPO_CYPHER_DIR")
    if override:
        return Path(override)
    return Path(__file__).resolve().parents[1] / "cypher"


@cache
def cypher(name: str) -> str:
    """The statement in ``hippo/cypher/<name>.cypher``, without its ``//`` comment lines."""
    return statement_at(cypher_dir() / f"{name}.cypher")


def statement_at(path: Path) -> str:
    """The statement in the ``.cypher`` file at ``path``, without its ``//`` comment lines."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise StoreError(f"Cypher file {path} is missing ({exc.strerror}); set HIPPO_CYPHER_DIR") from None
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("//")]
    return "\n".join(lines).strip().rstrip(";").strip()


def cypher_statements(name: str) -> list[str]:
    """The ``;``-separated statements of a multi-statement file (schema files)."""
    return [s.strip() for s in re.split(r";\s*(?:\n|$)", cypher(name)) if s.strip()]
