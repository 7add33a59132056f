"""Every error hippo raises on purpose. Callers catch ``HippoError``."""

from __future__ import annotations

from typing import Any


class HippoError(Exception):
    """Base class: something the caller can act on, with a one-line message."""


class InvalidInput(HippoError, ValueError):
    """Input that breaks a rule. Names the field and, where there is one, the limit."""

    def __init__(self, field: str, message: str, *, limit: Any = None) -> None:
        self.field = field
        self.limit = limit
        super().__init__(f"{field}: {message}")


class EmbeddingModelError(HippoError):
    """The embedding model cannot be loaded (hippo never downloads one)."""


class EmbeddingModelMismatch(HippoError):
    """The store already holds vectors of another embedding model."""


class EmbeddingBackendMismatch(EmbeddingModelMismatch):
    """The store holds vectors of the same model made by another backend (``hippo reembed`` moves it)."""


class StoreError(HippoError):
    """The store is unreachable, misconfigured or refused a write."""


class NotFound(HippoError, KeyError):
    """An id the caller named does not exist (or is not visible to them)."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else "not found"


class Conflict(HippoError):
    """Another writer changed the record between our read and our write (retry)."""


class AlreadyForgotten(HippoError):
    """``forget`` of something already forgotten: nothing changed."""

    code = "already_forgotten"


class NotForgotten(HippoError):
    """``restore`` of something that is live: nothing changed."""

    code = "not_forgotten"


class AccessDenied(HippoError, PermissionError):
    """The caller lacks a right on a space. Names the space and the missing right; nothing changed."""

    code = "access_denied"

    def __init__(self, space: str, right: str, *, who: str | None = None) -> None:
        self.space = space
        self.right = right
        who_part = f"{who!r} " if who else ""
        super().__init__(f"access denied: principal {who_part}may not {right} space {space!r}")
