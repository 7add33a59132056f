"""Where a store's derived state is saved, and what ties the saved copy to its store and settings.

- a SQLite file ``x.db``: beside it, ``x.db.hippo/`` (a store made again at that path has another
  id, so the folder is rebuilt, never taken for it);
- a Neo4j database (read in memory mode): ``neo4j-<where>-<id>/`` under ``Settings.derived_dir``
  (default ``HIPPO_CACHE_DIR/derived``) on the machine that opens it, ``<where>`` a digest of
  the server's address and the database, ``<id>`` the store's: two databases (or two servers)
  never share a folder, and a database emptied and written again (a new id) starts a new one
  and deletes the old;
- an in-memory store, or another kind: nowhere.
"""

from __future__ import annotations

import fcntl
import hashlib
import shutil
import sys
import uuid
from pathlib import Path

from hippo.config import Settings
from hippo.embed.filecache import cache_root
from hippo.memory.state import ann_settings
from hippo.store.base import DERIVED_NAMESPACE, Store
from hippo.store.sqlite import SQLiteStore


def store_id(store: Store) -> str:
    """A random id kept in the store: a file deleted and created again is another store."""
    found = store.get_values(DERIVED_NAMESPACE, ["store_id"]).get("store_id")
    if found is None:
        found = uuid.uuid4().hex
        store.put_values(DERIVED_NAMESPACE, {"store_id": found})
    return found


def kept_state_home(store: Store) -> bool:
    """Whether ``state_home`` has a folder for this kind of store (asks nothing of the store)."""
    return (isinstance(store, SQLiteStore) and store.url != ":memory:") or _is_neo4j(store)


def state_home(store: Store, identity: str, root: str | None = None) -> Path:
    """The folder of ``store``'s saved derived state (``kept_state_home`` must hold); ``root``: where a
    Neo4j database's go (``Settings.derived_dir``). A Neo4j database's folder not made yet (a new
    store) first makes ``forget_earlier_stores`` delete those of the stores it held before."""
    if isinstance(store, SQLiteStore):
        return Path(store.url + ".hippo")
    where = hashlib.sha256(f"{store.url}\n{store.database}".encode()).hexdigest()[:16]
    home = (Path(root).expanduser() if root else cache_root() / "derived") / f"neo4j-{where}-{identity[:16]}"
    if not home.exists():
        forget_earlier_stores(home)
    return home


def forget_earlier_stores(home: Path) -> list[Path]:
    """Delete the folders of the stores a Neo4j database held before this one (the same server and
    database, another id: it was emptied and written again), unless a process still keeps one open.
    Returns those deleted."""
    deleted = []
    prefix = home.name.rsplit("-", 1)[0] + "-"
    for other in sorted(home.parent.glob(prefix + "*")) if home.parent.is_dir() else []:
        if other == home or not other.is_dir():
            continue
        with (other / "lock").open("a+") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:  # a process opened it before the database was emptied, and still reads it
                continue
            shutil.rmtree(other, ignore_errors=True)
            deleted.append(other)
    return deleted


def _is_neo4j(store: Store) -> bool:
    neo4j = sys.modules.get("hippo.store.neo4j")  # an optional dependency: loaded if such a store is open
    return neo4j is not None and isinstance(store, neo4j.Neo4jStore)


def shape_key(settings: Settings, dim: int) -> dict:
    """The settings that decide what the derived state holds."""
    ann = ann_settings(settings)
    return {"dim": dim, "relation_weight": settings.relation_weight, "mention_weight": settings.mention_weight,
            "exact_max": ann.exact_max, "code_bits": ann.code_bits, "links": ann.links, "build_ef": ann.build_ef,
            "recall": ann.recall, "min_ef": ann.min_ef}
