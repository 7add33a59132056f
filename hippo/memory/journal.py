"""The journal of a saved derived state (``hippo.memory.persist``): one checksummed record per write.

A record is a header (magic, payload length, CRC-32 of the payload) and the payload, a
``hippo.memory.delta.Delta`` as bytes. Records are appended at the length counted so far, so a torn
tail a crash left, or a record its write did not keep, is cut by the next append.
"""

from __future__ import annotations

import logging
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path

log = logging.getLogger("hippo.persist")
RECORD = struct.Struct("<4sQI")  # magic, payload length, CRC-32 of the payload
MAGIC = b"HJR1"


def append_record(path: Path, at: int, payload: bytes) -> int:
    """Cut the journal at ``at`` bytes, append one record of ``payload``; returns the record's size."""
    with path.open("r+b" if path.exists() else "wb") as f:
        f.truncate(at)
        f.seek(at)
        f.write(RECORD.pack(MAGIC, len(payload), zlib.crc32(payload)) + payload)
    return RECORD.size + len(payload)


def cut_at(path: Path, at: int) -> None:
    """Drop what follows the first ``at`` bytes."""
    if path.exists():
        with path.open("r+b") as f:
            f.truncate(at)


def read_records(path: Path) -> Iterator[tuple[bytes, int]]:
    """Each complete record's payload, with the journal's length up to its end; a torn record ends it."""
    if not path.exists():
        return
    good, total = 0, path.stat().st_size
    with path.open("rb") as f:
        while True:
            head = f.read(RECORD.size)
            if len(head) < RECORD.size:
                return
            magic, size, crc = RECORD.unpack(head)  # a torn record's length is not trusted: nothing read
            payload = f.read(size) if magic == MAGIC and size <= total - good - RECORD.size else None
            if payload is None or len(payload) < size or zlib.crc32(payload) != crc:
                log.warning("journal %s: torn record at byte %d dropped", path, good)
                return
            good += RECORD.size + size
            yield payload, good
