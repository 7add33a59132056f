"""BM25 over the live passages, in process, with statistics of what the reader may see.

The stores' own full-text indexes (FTS5, Lucene) score with corpus-wide
statistics: a passage's BM25 score then depends on documents in spaces the
reader cannot see (their term counts move every IDF), which both leaks and
makes a restricted reader's ranking differ from a store that never held the
hidden documents. Here postings, document counts, lengths and document
frequencies are kept per space, up to date with every write, and a reader's
statistics are their sums over the spaces they may read. Both stores score
alike, and a passage is searchable the moment the engine's write returns.

A query costs what its rare words cost, not the corpus: words are read
rarest first, the postings of the common ones (past ``SCAN_BUDGET`` read in
all) only looked up for the passages that can still reach the top k
(MaxScore). A passage holding none of the words read scores at most what the
common ones can add; when the k-th best does not score above that, every word
is read in full. The top k is exact either way.

Rows are graph vertex ids, so liveness and spaces come from the projection.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from hippo.columns import Column, StringIds
from hippo.graph.ppr import this_workspace
from hippo.graph.scoring import kth_largest
from hippo.runs import Run, SortedRuns
from hippo.text import keyword_tokens as tokens

K1 = 1.2  # the usual defaults (FTS5, Lucene)
B = 0.75
IDF_FLOOR = 1e-6  # Robertson-Spärck Jones IDF, floored as FTS5 does: a word in most passages weighs ~0
# Postings read in full per query before common words are only looked up. A top k that could miss a passage
# is read again in full, so this moves cost only. Measured (recall, k 200 for the passage prior): at 100,000 no
# query of the 100k or 200k synthetic store needed the second read; at 30,000, 86 % of the 100k store's did
# (p50 17.4 against 18.3 ms), and the shortcut alone, without the second read, changed 11 % of the 200k
# store's top 5 hits.
SCAN_BUDGET = 100_000

Live = Callable[[np.ndarray], np.ndarray]
"""Rows -> whether each is a live passage."""


class SpacePostings:
    """One space's postings (term -> rows, ascending: rows are vertices, given in insertion order),
    and its live counts."""

    def __init__(self, runs: SortedRuns | None = None) -> None:
        self.runs = runs or SortedRuns({"rows": np.int32, "tfs": np.uint16})
        self.dead: dict[int, int] = {}  # postings of rows no longer live
        self.documents = 0  # live
        self.length = 0.0  # live tokens

    def add(self, row: int, counts: Counter[int]) -> None:
        terms = np.fromiter(counts, dtype=np.int64, count=len(counts))
        tfs = np.minimum(np.fromiter(counts.values(), dtype=np.int64, count=len(counts)), 65_535)
        self.runs.add(terms, rows=np.full(len(terms), row, dtype=np.int32), tfs=tfs.astype(np.uint16))

    def ready(self, terms: int) -> None:
        if self.runs.has_pending:
            self.runs.seal(terms)

    def parts(self, term: int) -> list[tuple[np.ndarray, np.ndarray]]:
        out = []
        for run in self.runs.runs:
            if term < run.keys and run.indptr[term + 1] > run.indptr[term]:
                a, b = run.indptr[term], run.indptr[term + 1]
                out.append((run.rows[a:b], run.tfs[a:b]))
        return out

    def df(self, term: int) -> int:
        return int(self.runs.count(np.array([term]))[0]) - self.dead.get(term, 0)

    def arrays(self, terms: int) -> dict[str, np.ndarray]:
        run = self.runs.compact(terms)
        dead = np.array(sorted(self.dead.items()), dtype=np.int64).reshape(-1, 2)
        return {"indptr": run.indptr, "rows": run.rows, "tfs": run.tfs, "dead": dead,
                "totals": np.array([self.documents, self.length])}

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> SpacePostings:
        run = Run(indptr=arrays["indptr"], columns={"rows": arrays["rows"], "tfs": arrays["tfs"]})
        space = cls(SortedRuns({"rows": np.int32, "tfs": np.uint16}, [run]))
        space.dead = {int(t): int(c) for t, c in arrays["dead"]}
        space.documents, space.length = int(arrays["totals"][0]), float(arrays["totals"][1])
        return space


@dataclass(frozen=True)
class Bm25:
    """BM25's weight of a word in a passage under one reader's statistics: the passages' lengths
    (by row) and their average over the passages the reader may see."""

    lengths: np.ndarray
    average: float

    def weights(self, rows: np.ndarray, tfs: np.ndarray, idf: float) -> np.ndarray:
        """The word's weight in each of ``rows`` (it occurs ``tfs`` times in them)."""
        tf = tfs.astype(np.float64)
        return idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * self.lengths[rows] / self.average))

    def add(self, rows: np.ndarray, tfs: np.ndarray, idf: float, total: np.ndarray, seen: np.ndarray,
            found: np.ndarray, count: int) -> int:
        """``weights`` added into ``total`` by row, the rows not ``seen`` before written to ``found``
        from ``count`` on; the new count (``hippo.memory.keyword_loop``, the same scores to the bit)."""
        from hippo.memory.keyword_loop import add_postings  # numba: imported on the first query, not with hippo

        return int(add_postings(rows, tfs, float(idf), self.lengths, float(self.average), K1, B, total, seen, found,
                                count))


class KeywordIndex:
    """Per-space postings; a query scores only rows its words occur in."""

    def __init__(self) -> None:
        self.vocabulary = StringIds()  # word -> term (a few million words at 1M passages: no dict)
        self.lengths = Column(np.float32)  # tokens per passage row
        self.spaces: dict[int, SpacePostings] = {}

    def _space(self, code: int) -> SpacePostings:
        space = self.spaces.get(code)
        if space is None:
            space = self.spaces[code] = SpacePostings()
        return space

    def _counts(self, text: str, grow: bool) -> tuple[Counter[int], int]:
        words = tokens(text)
        counts = Counter(words)
        terms = self.vocabulary.ids(list(counts), add=grow).tolist()
        return Counter({t: c for t, c in zip(terms, counts.values(), strict=True) if t >= 0}), len(words)

    def add(self, row: int, text: str, space: int = 0) -> None:
        """Index one live passage at graph vertex ``row`` (once per row)."""
        counts, length = self._counts(text, grow=True)
        self.lengths.extend_to(row + 1)
        self.lengths[row] = length
        postings = self._space(space)
        postings.add(row, counts)
        postings.documents += 1
        postings.length += length

    def set_live(self, text: str, space: int, live: bool) -> None:
        """A passage indexed before left (or came back to) the live set: move the statistics."""
        counts, length = self._counts(text, grow=False)
        postings = self._space(space)
        step = 1 if live else -1
        for term in counts:
            postings.dead[term] = postings.dead.get(term, 0) - step
            if not postings.dead[term]:
                del postings.dead[term]
        postings.documents += step
        postings.length += step * length

    def top(self, query: str, codes: np.ndarray | None, live: Live, k: int) -> list[tuple[int, float]]:
        """The ``k`` best (row, score) with a positive score among the spaces ``codes`` (None: all),
        best first; ties by row (store order)."""
        spaces = [self.spaces[c] for c in (self.spaces if codes is None else codes.tolist()) if c in self.spaces]
        for space in spaces:
            space.ready(len(self.vocabulary))
        terms = [t for t in self.vocabulary.ids(list(dict.fromkeys(tokens(query)))).tolist() if t >= 0]
        documents = sum(s.documents for s in spaces)
        if not terms or not documents or k <= 0:
            return []
        average = sum(s.length for s in spaces) / documents or 1.0
        stats = []
        for term in terms:
            df = sum(s.df(term) for s in spaces)
            if df > 0:
                idf = max(float(np.log((documents - df + 0.5) / (df + 0.5))), IDF_FLOOR)
                stats.append((df, term, idf))
        stats.sort()
        bm25 = Bm25(lengths=self.lengths.values, average=average)
        rows, scores, missed = self._candidates(spaces, stats, live, k, bm25, SCAN_BUDGET)
        if missed:  # a passage with only the common words could be among the best k: read them all
            rows, scores, _ = self._candidates(spaces, stats, live, k, bm25, None)
        positive = scores > 0
        rows, scores = rows[positive], scores[positive]
        if len(scores) > k:  # only what can be among the best k is sorted (ties at the k-th kept)
            near = scores >= kth_largest(scores, k)
            rows, scores = rows[near], scores[near]
        order = np.lexsort((rows, -scores))[:k]
        return [(int(rows[i]), float(scores[i])) for i in order]

    @staticmethod
    def _candidates(spaces: list[SpacePostings], stats: list[tuple[int, int, float]], live: Live, k: int,
                    bm25: Bm25, budget: int | None) -> tuple[np.ndarray, np.ndarray, bool]:
        """The live rows that can be among the best ``k`` with their scores, and whether a row holding
        none of the words read in full could be among them too. Words (``stats``: (df, term, idf))
        are read rarest first, in full up to ``budget`` postings (None: all); the rest are only
        looked up for the rows that can still reach the best k (MaxScore)."""
        scanned, read = [], 0
        while len(scanned) < len(stats) and (not scanned or budget is None or read + stats[len(scanned)][0] <= budget):
            read += stats[len(scanned)][0]
            scanned.append(stats[len(scanned)])
        looked_up = stats[len(scanned):]
        # Scores gather in a per-thread dense scratch: a term's rows are distinct, so each part adds
        # in one pass and no sort (np.unique of every posting cost most of a query).
        space, width = this_workspace(), len(bm25.lengths)
        total = space.array("bm25.scores", np.float64, width)
        seen = space.array("bm25.seen", bool, width)
        found = space.array("bm25.found", np.int64, width)
        count = 0
        try:
            for _, term, idf in scanned:
                for s in spaces:
                    for rows, tfs in s.parts(term):
                        count = bm25.add(rows, tfs, idf, total, seen, found, count)
        finally:  # the scratch goes back clean, whatever happened
            rows = found[:count].copy()
            scores = total[rows]
            total[rows] = 0.0
            seen[rows] = False
        alive = live(rows) if len(rows) else np.zeros(0, dtype=bool)
        rows, scores = rows[alive], scores[alive]
        if not looked_up:
            return rows, scores, False
        bound = sum((K1 + 1) * idf for _, _, idf in looked_up)  # the most the common words add to a row
        if len(rows) > k:  # only rows that can still reach the top k need the common words
            floor = kth_largest(scores, k)
            keep = scores + bound >= floor
            rows, scores = rows[keep], scores[keep]
        for _, term, idf in looked_up:
            for s in spaces:
                for part_rows, tfs in s.parts(term):
                    at = np.minimum(np.searchsorted(part_rows, rows), max(len(part_rows) - 1, 0))
                    hit = (part_rows[at] == rows) if len(part_rows) else np.zeros(len(rows), bool)
                    scores[hit] += bm25.weights(rows[hit], tfs[at[hit]], idf)
        # a row none of the scanned words holds scores at most ``bound``: the best k are exact when
        # the k-th of the candidates scores above it
        return rows, scores, int((scores > 0).sum()) < k or kth_largest(scores, k) <= bound

    def arrays(self) -> dict[str, np.ndarray]:
        return {"vocabulary": self.vocabulary.lines(), "lengths": self.lengths.values}

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray], spaces: dict[int, dict[str, np.ndarray]]) -> KeywordIndex:
        index = cls()
        index.vocabulary = StringIds.from_lines(arrays["vocabulary"])
        index.lengths = Column(np.float32, arrays["lengths"])
        index.spaces = {code: SpacePostings.from_arrays(a) for code, a in spaces.items()}
        return index
