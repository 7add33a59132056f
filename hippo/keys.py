"""API keys: kept as sha256 hashes, in a TOML/JSON file (``HIPPO_API_KEYS``) or in the
store's key-value area (``KeyRing.issue``, ``hippo keys issue``), each standing for a
principal (``hippo.access``).

Keys in the store switch authentication on exactly as a key file does
(``KeyRing.required``): once there is one, servers refuse callers without a key.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import threading
import time
import tomllib
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from hippo.access import DEFAULT_SCOPES, Grant, Principal, Scope, derive_principal
from hippo.errors import InvalidInput

KEY_NAMESPACE = "hippo.access.keys"  # sha256(key) -> KeyRecord JSON
KEY_PREFIX = "hk_"
KEY_ID_CHARS = 12  # how much of a key's hash ``hippo keys list`` shows and ``revoke`` accepts
MAX_KEYS_LISTED = 100_000
KEYS_RECHECK = 1.0  # seconds: how stale "are there store keys?" may be


def key_hash(key: str) -> str:
    """The form a key is kept in: sha256 hex of its UTF-8 bytes."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()




class KeyRecord(BaseModel):
    """One API key as stored: its hash and the principal it stands for."""

    model_config = ConfigDict(extra="forbid")

    sha256: str
    user: str
    groups: list[str] = Field(default_factory=list)
    scopes: list[Scope] = Field(default_factory=lambda: sorted(DEFAULT_SCOPES))
    read: list[str] = Field(default_factory=list)
    write: list[str] = Field(default_factory=list)
    label: str | None = None
    created_at: str | None = None

    @property
    def key_id(self) -> str:
        return self.sha256[:KEY_ID_CHARS]

    @field_validator("sha256")
    @classmethod
    def _hex(cls, value: str) -> str:
        value = value.strip().lower()
        if not re.fullmatch(r"[0-9a-f]{64}", value):
            raise ValueError("must be the 64 hex digits of sha256(key)")
        return value


class KeyFile(BaseModel):
    """The API key file: ``[[keys]]`` and ``[[grants]]`` tables (TOML) or the same in JSON."""

    model_config = ConfigDict(extra="forbid")

    keys: list[KeyRecord] = Field(default_factory=list)
    grants: list[Grant] = Field(default_factory=list)


def read_key_file(path: str | Path) -> KeyFile:
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InvalidInput("api_keys", f"cannot read {path}: {exc.strerror or exc}") from exc
    try:
        data: Any = tomllib.loads(raw.decode("utf-8")) if path.suffix == ".toml" else json.loads(raw)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvalidInput("api_keys", f"{path} is not valid {'TOML' if path.suffix == '.toml' else 'JSON'}: "
                                       f"{exc}") from exc
    try:
        return KeyFile.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(x) for x in first["loc"])
        raise InvalidInput(f"api_keys:{loc}", f"{first['msg']} (in {path})") from exc


class KeyRing:
    """API keys from a file and/or a store's key-value area, looked up by hash.

    The store is read on every lookup, so keys issued by another process are
    honoured at once and revoked ones stop working at once. ``required``: a
    key file is configured, or the store holds a key; a server then refuses
    callers without one.
    """

    def __init__(self, file: KeyFile | None = None, store: Any = None) -> None:
        self.file_given = file is not None
        self.file = file or KeyFile()
        self.store = store if store is not None and hasattr(store, "get_values") else None
        self._by_hash = {record.sha256: record for record in self.file.keys}
        self._stored_seen = False  # once a store key was seen, auth stays on for this ring's life
        self._checked_at = -KEYS_RECHECK
        self._check_lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: Any = None, store: Any = None) -> KeyRing:
        from hippo.config import Settings

        settings = settings or Settings()
        path = getattr(settings, "api_keys", None)
        return cls(read_key_file(path) if path else None, store)

    @property
    def grants(self) -> list[Grant]:
        return self.file.grants

    @property
    def required(self) -> bool:
        """Keys are configured: in a file, or issued into the store (rechecked every ``KEYS_RECHECK`` s)."""
        if self.file_given or self._stored_seen or self.store is None:
            return self.file_given or self._stored_seen
        with self._check_lock:
            if time.monotonic() - self._checked_at >= KEYS_RECHECK:
                self._stored_seen = bool(self.store.list_values(KEY_NAMESPACE, limit=1))
                self._checked_at = time.monotonic()
        return self._stored_seen

    def _stored(self, digest: str) -> KeyRecord | None:
        if self.store is None:
            return None
        raw = self.store.get_values(KEY_NAMESPACE, [digest]).get(digest)
        return KeyRecord.model_validate_json(raw) if raw else None

    def record_for_key(self, key: str) -> KeyRecord | None:
        if not isinstance(key, str) or not key:
            return None
        digest = key_hash(key)
        return self._by_hash.get(digest) or self._stored(digest)

    def principal_for_key(self, key: str, *, sessions: Iterable[str] = ()) -> Principal | None:
        """The principal an API key stands for, or None for an unknown key."""
        record = self.record_for_key(key)
        if record is None:
            return None
        return derive_principal(record.user, groups=record.groups, scopes=record.scopes, grants=self.grants,
                                sessions=sessions, read=record.read, write=record.write)

    def records(self) -> list[tuple[str, KeyRecord]]:
        """Every key as (where it is kept: ``file`` or ``store``, its record)."""
        stored = self.store.list_values(KEY_NAMESPACE, limit=MAX_KEYS_LISTED) if self.store is not None else {}
        return [*(("file", r) for r in self.file.keys),
                *(("store", KeyRecord.model_validate_json(raw)) for raw in stored.values())]

    def issue(self, user_id: str, *, scopes: Iterable[str] = DEFAULT_SCOPES, groups: Iterable[str] = (),
              read: Iterable[str] = (), write: Iterable[str] = (), label: str | None = None) -> str:
        """Create a key in the store; returns the key itself, which is never stored."""
        if self.store is None:
            raise InvalidInput("store", "keys can only be issued into a store (file keys are written by hand)")
        scopes = sorted(scopes)
        derive_principal(user_id, scopes=scopes, groups=groups, read=read, write=write)  # validates them all
        key = KEY_PREFIX + secrets.token_urlsafe(32)
        record = KeyRecord(sha256=key_hash(key), user=user_id, groups=sorted(groups), scopes=scopes,
                           read=sorted(read), write=sorted(write), label=label,
                           created_at=datetime.now(UTC).isoformat(timespec="seconds"))
        self.store.put_values(KEY_NAMESPACE, {record.sha256: record.model_dump_json()})
        return key

    def revoke(self, key: str) -> bool:
        """Remove a store key, named by the key itself, its sha256 or its id (the first
        ``KEY_ID_CHARS`` hex digits ``hippo keys list`` shows); True when it was there."""
        digest = self._digest_named(key)
        if digest is None or self._stored(digest) is None:
            return False
        self.store.put_values(KEY_NAMESPACE, {digest: None})
        return True

    def _digest_named(self, name: str) -> str | None:
        if self.store is None or not isinstance(name, str) or not name:
            return None
        lowered = name.strip().lower()
        if not re.fullmatch(rf"[0-9a-f]{{{KEY_ID_CHARS},64}}", lowered):
            return key_hash(name)
        matches = [d for d in self.store.list_values(KEY_NAMESPACE, limit=MAX_KEYS_LISTED) if d.startswith(lowered)]
        if len(matches) > 1:
            raise InvalidInput("key", f"{name!r} starts {len(matches)} key hashes; give more digits")
        return matches[0] if matches else key_hash(name)


def key_from_headers(headers: Mapping[str, str] | None) -> str | None:
    """The API key a request carries: ``Authorization: Bearer <key>`` or ``X-API-Key: <key>``."""
    if not headers:
        return None
    lowered = {k.lower(): v for k, v in headers.items()}
    auth = lowered.get("authorization", "")
    if auth[:7].lower() == "bearer " and auth[7:].strip():
        return auth[7:].strip()
    key = lowered.get("x-api-key", "").strip()
    return key or None


def principal_for_key(key: str, *, settings: Any = None, store: Any = None) -> Principal | None:
    """The principal of an API key (file ``HIPPO_API_KEYS`` first, then the store), or None."""
    return KeyRing.from_settings(settings, store).principal_for_key(key)


def keys_configured(store: Any, settings: Any) -> bool:
    """Whether servers on this store will ask callers for a key: a key file, a key issued
    into the store, or ``HIPPO_REQUIRE_API_KEY``."""
    if getattr(settings, "require_api_key", False):
        return True
    return KeyRing.from_settings(settings, store).required
