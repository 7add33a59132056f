"""BM25 over the live passages, in process, with statistics of what the reader may see.

The stores' own full-text indexes (FTS5, Lucene) score with corpus-wide
statistics: a passage's BM25 score then depends on documents in spaces the
reader cannot see (their term counts move every IDF), which both leaks and
makes a restricted reader's ranking differ from a store that never held the
hidden documents. Scoring here computes document frequency, document count
and average length over the visible passages only, per query; it also gives
both stores the same scores, and a passage is searchable the moment the
engine's write returns.

Rows are graph vertex ids, so the reader's visibility mask (``GraphView.
visible_passage``) applies directly; vertices that are not passages have no
postings.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter

import numpy as np

_WORD = re.compile(r"\w+", re.UNICODE)
K1 = 1.2  # the usual defaults (FTS5, Lucene)
B = 0.75
IDF_FLOOR = 1e-6  # Robertson-Spärck Jones IDF, floored as FTS5 does: a word in most passages weighs ~0


def tokens(text: str) -> list[str]:
    """Lower-cased words with diacritics removed (what FTS5's unicode61 tokenizer does)."""
    decomposed = unicodedata.normalize("NFKD", text)
    stripped = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return _WORD.findall(stripped.casefold())


class KeywordIndex:
    """Postings per term, growable; a query scores only the rows its terms occur in."""

    def __init__(self) -> None:
        self._postings: dict[str, tuple[list[int], list[int]]] = {}  # term -> (rows, term counts)
        self._arrays: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._lengths: list[float] = []
        self._length_array: np.ndarray | None = None

    def add(self, row: int, text: str) -> None:
        """Index one passage at graph vertex ``row`` (once per row)."""
        words = tokens(text)
        if row >= len(self._lengths):
            self._lengths.extend([0.0] * (row + 1 - len(self._lengths)))
        self._lengths[row] = float(len(words))
        self._length_array = None
        for term, count in Counter(words).items():
            rows, counts = self._postings.setdefault(term, ([], []))
            rows.append(row)
            counts.append(count)
            self._arrays.pop(term, None)

    def _posting(self, term: str) -> tuple[np.ndarray, np.ndarray] | None:
        if term not in self._postings:
            return None
        if term not in self._arrays:
            rows, counts = self._postings[term]
            self._arrays[term] = (np.array(rows, dtype=np.int64), np.array(counts, dtype=np.float64))
        return self._arrays[term]

    def scores(self, query: str, visible: np.ndarray) -> np.ndarray:
        """BM25 of every row for ``query`` (0 where no query word occurs), as long as ``visible``.

        ``visible`` is a boolean mask over rows; invisible rows neither score
        nor count in the statistics (document count, frequencies, average length).
        """
        total = np.zeros(len(visible))
        terms = list(dict.fromkeys(tokens(query)))
        if not terms or not self._lengths:
            return total
        if self._length_array is None:
            self._length_array = np.array(self._lengths)
        n = min(len(self._length_array), len(visible))
        lengths = self._length_array[:n]
        mask = visible[:n]
        documents = int(mask.sum())
        if not documents:
            return total
        average = float(lengths[mask].sum()) / documents or 1.0
        for term in terms:
            posting = self._posting(term)
            if posting is None:
                continue
            rows, counts = posting
            inside = rows < n
            keep = np.zeros(len(rows), dtype=bool)
            keep[inside] = mask[rows[inside]]
            rows, counts = rows[keep], counts[keep]
            if not len(rows):
                continue
            idf = max(np.log((documents - len(rows) + 0.5) / (len(rows) + 0.5)), IDF_FLOOR)
            norm = counts + K1 * (1 - B + B * lengths[rows] / average)
            total[rows] += idf * counts * (K1 + 1) / norm  # a row occurs once per posting
        return total

    def top(self, query: str, visible: np.ndarray, k: int) -> list[tuple[int, float]]:
        """The ``k`` best (row, score) with a positive score, best first; ties by row (store order)."""
        scores = self.scores(query, visible)
        hits = np.flatnonzero(scores > 0)
        order = hits[np.lexsort((hits, -scores[hits]))][:k]
        return [(int(row), float(scores[row])) for row in order]
