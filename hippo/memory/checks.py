"""Checksums of the saved derived state's files, read in full only when a file changed.

Opening a saved state (``hippo.memory.persist``) checks every file against the
CRC-32 its manifest records. Reading every byte made the check most of an open
(2Wiki's 6k passages: 0.97 of 1.21 s; a 100k-passage store: 10.6 of 13.2 s on a
busy disk), and it grows with the store. So a file's last good check is kept
beside the manifest (``CHECKED.json``) with the file's size, modification time
and inode; while those still match, the file is not read again. Anything that
writes a file, truncates, replaces or copies it changes them, and the next open
reads it whole and checks it. What a stamp cannot see is a file changed in place
with its time set back, or bits that rot on the disk; deleting ``CHECKED.json``
makes the next open check every byte again.
"""

from __future__ import annotations

import json
import os
import zlib
from pathlib import Path

CHUNK = 1 << 24


class Corrupt(Exception):
    """A saved file does not match its manifest."""


def crc32(path: Path, size: int | None = None) -> int:
    """CRC-32 of the first ``size`` bytes of a file (all of it by default)."""
    crc, left = 0, path.stat().st_size if size is None else size
    with path.open("rb") as f:
        while left > 0 and (block := f.read(min(CHUNK, left))):
            crc, left = zlib.crc32(block, crc), left - len(block)
    return crc


def fsync_file(path: Path) -> None:
    """Make a written file's contents durable."""
    with path.open("rb") as f:
        os.fsync(f.fileno())


def fsync_dir(path: Path) -> None:
    """Make the entries of a directory (files created, renamed into it) durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _stamp(path: Path, size: int, crc: int) -> list[int]:
    st = path.stat()
    return [st.st_size, st.st_mtime_ns, st.st_ino, size, crc]


class Checks:
    """The files of one saved-state directory whose checksum was last found good, and when."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / "CHECKED.json"
        try:
            self._stamps: dict[str, list[int]] = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            self._stamps = {}
        self._changed = False

    def written(self, name: str, path: Path, entry: dict[str, int] | None = None) -> dict[str, int]:
        """A file just written, stamped as checked: its manifest entry (size, CRC-32), read from the
        file unless the writer computed it (``entry``)."""
        if entry is None:
            entry = {"bytes": path.stat().st_size, "crc": crc32(path)}
        self._stamps[name] = _stamp(path, entry["bytes"], entry["crc"])
        self._changed = True
        return entry

    def verify(self, name: str, path: Path, entry: dict[str, int]) -> None:
        """Raise ``Corrupt`` unless the file's first ``entry['bytes']`` bytes have its CRC-32."""
        if not path.exists():
            raise Corrupt(f"{name} is missing")
        if path.stat().st_size < entry["bytes"]:
            raise Corrupt(f"{name} is shorter than saved")
        if self._stamps.get(name) == _stamp(path, entry["bytes"], entry["crc"]):
            return
        if crc32(path, entry["bytes"]) != entry["crc"]:
            raise Corrupt(f"{name} fails its checksum")
        self._stamps[name] = _stamp(path, entry["bytes"], entry["crc"])
        self._changed = True

    def keep_only(self, names: set[str]) -> None:
        """Forget the files no manifest names any more."""
        for name in [n for n in self._stamps if n not in names]:
            del self._stamps[name]
            self._changed = True

    def save(self) -> None:
        """Write the stamps (atomically; a torn or lost file only costs the next open a full check)."""
        if not self._changed:
            return
        temporary = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        temporary.write_text(json.dumps(self._stamps), encoding="utf-8")
        os.replace(temporary, self.path)
        self._changed = False
