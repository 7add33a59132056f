"""Who is asking, and what they may read and write.

- ``principal``: a ``Principal`` (user, groups, scopes, readable and writable spaces),
  ``Grant``s that widen it, and ``require``, the one check every facade asks;
- ``keys``: API keys, kept as hashes in a key file or the store, each standing for a principal;
- ``sessions``: who owns each ``session:<id>`` space;
- ``scoped``: ``ScopedMemory``, the ``Memory`` one principal sees, which checks every call.

Space names and the ids each space owns are ``hippo.spaces``. The servers
(``hippo.api``) resolve a principal from an API key once per request and call the
engine only through ``ScopedMemory``.
"""

from hippo.access.keys import (KEY_NAMESPACE, KeyFile, KeyRecord, KeyRing, key_from_headers, key_hash, keys_configured,
                               principal_for_key, read_key_file)
from hippo.access.principal import (ALL_SCOPES, DEFAULT_SCOPES, ORG, Grant, Principal, Scope, admin_principal,
                                    derive_principal, require)
from hippo.access.scoped import MAX_CLEAR, ClearResult, ScopedMemory
from hippo.access.sessions import SESSION_NAMESPACE, SessionRegistry
from hippo.spaces import session_space, user_space

__all__ = [
    "ALL_SCOPES", "DEFAULT_SCOPES", "KEY_NAMESPACE", "MAX_CLEAR", "ORG", "SESSION_NAMESPACE", "ClearResult", "Grant",
    "KeyFile", "KeyRecord", "KeyRing", "Principal", "Scope", "ScopedMemory", "SessionRegistry", "admin_principal",
    "derive_principal", "key_from_headers", "key_hash", "keys_configured", "principal_for_key", "read_key_file",
    "require", "session_space", "user_space",
]
