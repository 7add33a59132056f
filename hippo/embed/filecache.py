"""Files hippo derives once and keeps: checksummed, written atomically, built by one process at a time.

A cached file ``f`` comes with ``f.sha256``, the hex digest of its bytes. A
reader trusts ``f`` only when the digest matches, so a truncated or corrupt
file is rebuilt, never loaded. A build writes to a temporary file in the same
folder and renames it into place (``os.replace`` is atomic on POSIX), so a
crash or a failed build leaves no partial file. Builders take an exclusive
``flock`` on ``f.lock``: a second process racing on first use waits, then
finds the first one's file; where locks do not work (some network file
systems) both build and both renames are still whole files.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

log = logging.getLogger("hippo.embed")

_READ_CHUNK = 1 << 20


def cache_root() -> Path:
    """``HIPPO_CACHE_DIR``, else ``~/.cache/hippo``."""
    override = os.environ.get("HIPPO_CACHE_DIR")
    return Path(override).expanduser() if override else Path.home() / ".cache" / "hippo"


def digest(path: Path) -> str:
    sha = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(_READ_CHUNK):
            sha.update(chunk)
    return sha.hexdigest()


def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def read_verified(path: Path) -> bytes | None:
    """The file's bytes when its checksum matches; None when it is missing, truncated or corrupt."""
    try:
        expected = _sidecar(path).read_text(encoding="ascii").strip()
        data = path.read_bytes()
    except (OSError, UnicodeDecodeError):
        return None
    if hashlib.sha256(data).hexdigest() != expected:
        log.warning("cached file %s does not match its checksum: rebuilding it", path)
        return None
    return data


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path.with_name(path.name + ".lock"), "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _write_atomically(target: Path, write: Callable[[Path], None]) -> None:
    """``write(tmp)`` then rename ``tmp`` to ``target``; on any failure no temporary file is left."""
    fd, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=f".tmp{target.suffix}")
    os.close(fd)
    tmp = Path(name)
    try:
        write(tmp)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o644 & ~umask)  # mkstemp's 0600 would hide a shared cache from other users
        with tmp.open("rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def cached_file(path: Path, build: Callable[[Path], None]) -> bytes:
    """The verified bytes of ``path``, building it first with ``build(tmp_path)`` when needed.

    ``build`` writes the whole file at the path it is given; if it raises,
    nothing is left behind and the error propagates.
    """
    data = read_verified(path)
    if data is not None:
        return data
    path.parent.mkdir(parents=True, exist_ok=True)
    with _locked(path):
        data = read_verified(path)  # another process may have built it while we waited
        if data is not None:
            return data
        _sidecar(path).unlink(missing_ok=True)  # a stale checksum must never vouch for a new file
        _write_atomically(path, build)
        checksum = digest(path)
        _write_atomically(_sidecar(path), lambda tmp: tmp.write_text(checksum + "\n", encoding="ascii"))
    data = read_verified(path)
    if data is None:
        raise OSError(f"{path} changed while it was being written")
    return data
