"""When a saved state's journal is folded into a new snapshot (``hippo.memory.persist``).

Replaying a journal record redoes its write's graph inserts, so it costs about what following
the write cost, not what reading its bytes costs. A rule on bytes alone (fold past a quarter of
the snapshot's bytes) let a 370k-passage build run 200 writes past its snapshot: a 1.2 GB journal
that a reopen after a kill spent 433 s replaying. So the journal is also folded once
replaying it would cost ``REPLAY_PER_FOLD`` folds: folding then costs at most ``1 /
REPLAY_PER_FOLD`` of the time spent following writes, and a kill costs the next open at most
``REPLAY_PER_FOLD`` folds' time of replay, whatever the store's size.

A fold's time is the least of the last ``FOLDS_KEPT`` (the manifest keeps them): one fold slowed by
other work on the machine (335.6 s at 389k passages beside a CI run and two rebuilds, where the
next quiet one took 10.9 s) would otherwise loosen the bound on replay until the next fold.
"""

from __future__ import annotations

from dataclasses import dataclass

COMPACT_RATIO = 0.25  # a journal larger than this share of the snapshot's bytes is folded
COMPACT_MIN = 64 << 20
CLOSE_RATIO = 0.02  # closing folds a journal larger than this share of the snapshot's bytes
REPLAY_PER_FOLD = 3.0  # the journal is folded once replaying it would take this many folds' time
REPLAY_FLOOR = 5.0  # seconds of replay never worth a fold while writing
CLOSE_REPLAY = 1.0  # seconds of replay a close folds away: every later open would pay them
FOLD_BYTES_PER_SECOND = 150e6  # a fold's speed where none was measured (a snapshot saved by an older hippo)
FOLDS_KEPT = 3


@dataclass
class FoldPolicy:
    """The journal of one snapshot, as a fold decides on it."""

    snapshot_bytes: int = 0
    fold_seconds: float = 0.0  # what a fold takes: the least of the last ones measured
    journal_bytes: int = 0  # also where the next record is appended
    replay_seconds: float = 0.0  # what replaying the journal as it stands would take

    @classmethod
    def of(cls, manifest: dict) -> FoldPolicy:
        size = int(manifest.get("bytes", 0))
        return cls(size, min(folds_kept(manifest), default=size / FOLD_BYTES_PER_SECOND))

    def followed(self, record_bytes: int, seconds: float) -> None:
        """A journaled write the state followed in ``seconds``: replaying it costs about as much."""
        self.journal_bytes += record_bytes
        self.replay_seconds += seconds

    def due(self) -> bool:
        """Fold now, after a write."""
        return (self.journal_bytes > max(COMPACT_MIN, COMPACT_RATIO * self.snapshot_bytes)
                or self.replay_seconds > max(REPLAY_FLOOR, REPLAY_PER_FOLD * self.fold_seconds))

    def due_at_close(self) -> bool:
        """Fold on closing: the next open would replay what a fold now spares it."""
        return self.journal_bytes > CLOSE_RATIO * self.snapshot_bytes or self.replay_seconds > CLOSE_REPLAY


def folds_kept(manifest: dict | None, seconds: float | None = None) -> list[float]:
    """The fold times a manifest keeps, with ``seconds`` (a fold just made) last, at most ``FOLDS_KEPT``."""
    kept = (manifest or {}).get("fold_seconds", [])
    kept = [float(kept)] if isinstance(kept, int | float) else [float(x) for x in kept]
    return (kept + ([round(seconds, 3)] if seconds is not None else []))[-FOLDS_KEPT:]
