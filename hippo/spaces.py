"""Space names, and the document ids each space owns.

A space name is ``org`` or ``<kind>:<name>`` (``user:dana``, ``session:ses-1f…``,
``memory:mem-9c…``, ``team:eng``): the kind is lowercase ASCII, the name is
letters and digits of any script plus ``. _ - @ + = :``, 200 characters at
most. No whitespace, control character or ``/`` (it separates a space from
the ids it owns).

Every id resolves inside one space, so no caller can create, occupy or
rewrite an id that another space would use:

- a caller's document id in ``org`` is stored as given (ids of existing
  stores stay as they are);
- a caller's document id ``X`` in any other space ``S`` is stored as
  ``S/X``. Two spaces holding the same caller id hold two documents, and
  neither learns of the other. An id already of the form ``S/X``, or one
  already stored in ``S`` (a derived id, or one written before ids were
  owned by their space), is kept;
- ids hippo derives (``doc:``, ``memory:``, ``passage:``, ``entity:``,
  ``fact:`` and 20 hex digits) hash the space in outside ``org``;
  in ``org`` a caller may give one only for a record ``org`` already holds
  or for the document it derives for that very text, and never an id of
  the form ``<space>/...`` of another space.
"""

from __future__ import annotations

import re

from hippo.errors import InvalidInput
from hippo.ids import document_id

ORG = "org"
MAX_SPACE_CHARS = 200
MAX_NAME_CHARS = 190  # a user or session id: its space name stays within MAX_SPACE_CHARS
NAME = r"[\w.@+=:-]+"
SPACE = re.compile(rf"(?:org|[a-z][a-z0-9_-]{{0,31}}:{NAME})")
"""The one pattern every space name matches (``re.fullmatch``)."""
_NAME = re.compile(NAME)
SEPARATOR = "/"
DERIVED = re.compile(r"(?:doc|memory|passage|entity|fact):[0-9a-f]{20}")
"""The form of the ids hippo derives from content or from a caller's key."""


def check_space(field: str, value: object) -> str:
    """The space name, or ``InvalidInput`` naming the field and the pattern."""
    if not isinstance(value, str):
        raise InvalidInput(field, f"must be a string, got {type(value).__name__}")
    if len(value) > MAX_SPACE_CHARS:
        raise InvalidInput(field, f"has {len(value)} characters; the limit is {MAX_SPACE_CHARS}",
                           limit=MAX_SPACE_CHARS)
    if not SPACE.fullmatch(value):
        raise InvalidInput(field, f"{value!r} is not a space name: 'org' or '<kind>:<name>' (kind a-z, 0-9, "
                                  "_ or -; name letters, digits and . _ - @ + = :, no spaces, control "
                                  "characters or '/')")
    return value


def check_name(field: str, value: object) -> str:
    """A user or session id: the name part of a space name."""
    if not isinstance(value, str) or not value:
        raise InvalidInput(field, "is empty")
    if len(value) > MAX_NAME_CHARS:
        raise InvalidInput(field, f"has {len(value)} characters; the limit is {MAX_NAME_CHARS}",
                           limit=MAX_NAME_CHARS)
    if not _NAME.fullmatch(value):
        raise InvalidInput(field, f"{value!r} may hold letters, digits and . _ - @ + = : only (no spaces, "
                                  "control characters or '/')")
    return value


def user_space(user_id: str) -> str:
    return f"user:{check_name('user_id', user_id)}"


def session_space(session_id: str) -> str:
    return f"session:{check_name('session_id', session_id)}"


def owner_of(document_id: str) -> str | None:
    """The space a ``<space>/<id>`` id belongs to, or None for an id without one."""
    head, sep, _ = document_id.partition(SEPARATOR)
    return head if sep and head != ORG and SPACE.fullmatch(head) else None


def stored_id(space: str, caller_id: str, *, held: bool) -> str:
    """The id a caller's document id is stored under in ``space``.

    ``held``: ``space`` already holds a record with exactly ``caller_id``.
    """
    if space == ORG or held or caller_id.startswith(space + SEPARATOR):
        return caller_id
    return f"{space}{SEPARATOR}{caller_id}"


def check_org_id(field: str, caller_id: str, *, held: bool, title: str, text: str) -> None:
    """Refuse an ``org`` id that would occupy an id of another space (see the module docstring)."""
    if held:
        return
    owner = owner_of(caller_id)
    if owner is not None:
        raise InvalidInput(field, f"ids of the form '{owner}/...' belong to space {owner!r}; give another id")
    if DERIVED.fullmatch(caller_id) and caller_id != document_id(title, text, ORG):
        raise InvalidInput(field, "has the form of an id hippo derives (doc:, memory:, passage:, entity: or "
                                  "fact: and 20 hex digits); leave the id out or give another")
