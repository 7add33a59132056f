"""In-process BM25 (``hippo.memory.keywords``): the MaxScore shortcut never changes the top k."""

import math
from collections import Counter

import numpy as np
import pytest

import hippo.memory.keywords as keywords
from hippo.memory.keywords import IDF_FLOOR, K1, B, Bm25, KeywordIndex
from hippo.text import keyword_tokens


def _corpus(rng: np.random.Generator, passages: int, vocabulary: int = 300) -> list[str]:
    """Zipf-like word use: a few words in most passages, most words in few."""
    weights = 1.0 / np.arange(1, vocabulary + 1)
    weights /= weights.sum()
    return [" ".join(f"w{i}" for i in rng.choice(vocabulary, size=int(rng.integers(5, 40)), p=weights))
            for _ in range(passages)]


def _exact(texts: list[str], live: np.ndarray, query: str, k: int) -> list[tuple[int, float]]:
    """BM25 of every live passage, written out from its definition (FTS5's floored IDF)."""
    docs = {row: Counter(keyword_tokens(text)) for row, text in enumerate(texts) if live[row]}
    lengths = {row: sum(c.values()) for row, c in docs.items()}
    average = sum(lengths.values()) / len(docs)
    scores: dict[int, float] = {}
    for word in dict.fromkeys(keyword_tokens(query)):
        df = sum(1 for c in docs.values() if word in c)
        if not df:
            continue
        idf = max(math.log((len(docs) - df + 0.5) / (df + 0.5)), IDF_FLOOR)
        for row, counts in docs.items():
            if tf := counts.get(word):
                scores[row] = scores.get(row, 0.0) + idf * tf * (K1 + 1) / (
                    tf + K1 * (1 - B + B * lengths[row] / average))
    return sorted(((r, s) for r, s in scores.items() if s > 0), key=lambda x: (-x[1], x[0]))[:k]


@pytest.mark.parametrize("budget", [1, 40, 400])
def test_the_top_k_is_exact_whatever_the_scan_budget(monkeypatch, budget):
    """Words past the budget are only looked up for the passages that can still reach the top k;
    where one holding only those words could be among them, every word is read in full. Checked
    against BM25 written out from its definition, on queries that take both paths."""
    rng = np.random.default_rng(budget)
    texts = _corpus(rng, 600)
    index = KeywordIndex()
    for row, text in enumerate(texts):
        index.add(row, text, space=0)
    live = rng.random(len(texts)) > 0.1  # some passages forgotten: out of the statistics, still in the postings
    for row in np.flatnonzero(~live):
        index.set_live(texts[row], 0, False)
    monkeypatch.setattr(keywords, "SCAN_BUDGET", budget)
    reads: list[int | None] = []
    candidates = KeywordIndex._candidates

    def counted(*args):
        reads.append(args[-1])
        return candidates(*args)

    monkeypatch.setattr(KeywordIndex, "_candidates", staticmethod(counted))
    paths = Counter()
    for q in range(60):
        query = " ".join(f"w{i}" for i in rng.choice(300, size=int(rng.integers(1, 6)), replace=False))
        query += " w0 w1"  # words in most passages: past any small budget
        k = int(rng.choice([1, 5, 20, 100]))
        reads.clear()
        got = index.top(query, None, lambda rows: live[rows], k)
        exact = dict(_exact(texts, live, query, len(texts)))
        want = _exact(texts, live, query, k)
        # the same scores rank by rank, each the passage's own (lengths are float32 in the index, so two
        # passages tied here may differ in the last bits there: a tie may come in either order)
        assert len(got) == len(want), (query, k)
        assert np.allclose([exact[r] for r, _ in got], [s for _, s in want], rtol=1e-6, atol=0), (query, k)
        assert np.allclose([s for _, s in got], [s for _, s in want], rtol=1e-6, atol=0), (query, k)
        paths["read again in full" if None in reads else "one pass"] += 1
    if budget < 400:  # both paths taken: the shortcut, and the full read when it could miss a passage
        assert paths["one pass"] > 0 and paths["read again in full"] > 0, paths


def test_the_compiled_pass_adds_what_the_array_formula_gives_to_the_bit():
    """A scanned word's postings are added in one compiled pass (``Bm25.add``), a looked-up word's
    with numpy (``Bm25.weights``): both must score a passage alike, or a passage's score would
    depend on whether its words were scanned or looked up, and ties would order by that."""
    rng = np.random.default_rng(7)
    lengths = rng.integers(1, 400, size=5_000).astype(np.float32)
    bm25 = Bm25(lengths=lengths, average=float(lengths.mean()) * 1.013)
    total, seen, found = np.zeros(len(lengths)), np.zeros(len(lengths), bool), np.zeros(len(lengths), np.int64)
    count, want, order = 0, np.zeros(len(lengths)), []
    for idf in (0.37, 2.9, 1e-6):  # three words, some rows in several: a row is found once, when first seen
        rows = np.sort(rng.choice(len(lengths), size=900, replace=False)).astype(np.int32)
        tfs = rng.integers(1, 9, size=len(rows)).astype(np.uint16)
        count = bm25.add(rows, tfs, idf, total, seen, found, count)
        want[rows] += bm25.weights(rows, tfs, idf)
        order += [r for r in rows.tolist() if r not in set(order)]
    assert found[:count].tolist() == order
    assert np.array_equal(total, want)  # bitwise, not approximately
    assert seen.sum() == count
