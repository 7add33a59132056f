"""Counts of LLM calls and tokens, per stage (``ner``, ``triples``, ``filter``, ``clues``).

Every component that calls the model owns one ``Usage`` and reports it; the
counts are what a bill is made of, so they are kept exactly (no sampling).
"""

from __future__ import annotations

import threading
from collections import defaultdict

COUNTERS = ("calls", "prompt_tokens", "completion_tokens", "retries", "failures", "truncated",
            "format_downgrades")


class Usage:
    """Thread-safe counters by stage. ``mark()`` then ``since(mark)`` gives one call's share."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stages: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(COUNTERS, 0))

    def add(self, stage: str, **counts: int) -> None:
        with self._lock:
            row = self._stages[stage]
            for name, value in counts.items():
                row[name] = row.get(name, 0) + int(value)

    def mark(self) -> dict[str, dict[str, int]]:
        with self._lock:
            return {stage: dict(row) for stage, row in self._stages.items()}

    def since(self, mark: dict[str, dict[str, int]] | None = None) -> dict[str, dict[str, int]]:
        """Counts added after ``mark`` (all counts without one); stages with no call left out."""
        now = self.mark()
        mark = mark or {}
        out: dict[str, dict[str, int]] = {}
        for stage, row in now.items():
            before = mark.get(stage, {})
            delta = {name: value - before.get(name, 0) for name, value in row.items()}
            if any(delta.values()):
                out[stage] = delta
        return out

    @staticmethod
    def totals(stages: dict[str, dict[str, int]]) -> dict[str, int]:
        total: dict[str, int] = dict.fromkeys(("calls", "prompt_tokens", "completion_tokens"), 0)
        for row in stages.values():
            for name in total:
                total[name] += row.get(name, 0)
        return total
