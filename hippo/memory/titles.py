"""Passage titles a question names, found by exact phrase match.

Multi-hop questions over encyclopedic text name the page the chain starts
from ("the director of film *Emile the African*", "which film came first,
*College Coach* or *Los Últimos Días*?"). A dense embedding of the whole
question blurs such a name among the other words; an exact match of the
title's words does not. Recall puts the matched passages into the walk's
reset vector as seeds, so the first hop starts on the named page and the
walk leaves it through the entities that page mentions (the bridge).

A title matches when its normalized words occur as a contiguous run of the
question's normalized words. A disambiguation suffix is optional ("Midnight
Court (film)" is named as "Midnight Court"). A one-word title only counts
when the question writes it as a name (capitalized, not the question's first
word): "Brand" in "the author of Brand", never "adolescence" in "during
adolescence".
"""

from __future__ import annotations

import re
from collections import defaultdict

import numpy as np

from hippo.columns import StringIds, StringTable
from hippo.text import normalize

_SUFFIX = re.compile(r"\s*\([^()]*\)\s*$")
MAX_TITLE_WORDS = 12  # longer titles are sentences, not names a question repeats


def title_keys(title: str) -> list[str]:
    """The word sequences that name a title: in full, and without a trailing "(...)"."""
    keys = [normalize(title)]
    bare = _SUFFIX.sub("", title)
    if bare != title:
        keys.append(normalize(bare))
    return [k for k in dict.fromkeys(keys) if k and len(k.split()) <= MAX_TITLE_WORDS]


class TitleIndex:
    """Normalized title words -> graph vertices of the passages with that title.

    The keys (words joined by spaces) are numbered in a ``StringIds``, and each key's vertices are
    one run of an array as saved, plus those added since: at 1M passages ~2M keys would otherwise
    hold a tuple of words and a list each (~300 B a title)."""

    def __init__(self, keys: StringIds | None = None, starts: np.ndarray | None = None,
                 vertices: np.ndarray | None = None) -> None:
        self._keys = keys if keys is not None else StringIds()
        self._starts = np.asarray(starts if starts is not None else [0], dtype=np.int64)  # the saved runs
        self._vertices = np.asarray(vertices if vertices is not None else [], dtype=np.int64)
        self._added: dict[int, list[int]] = {}  # key number -> vertices added since
        blob, offsets = self._keys.table.arrays()  # the most words a key has: its spaces, counted at once
        spaces = np.concatenate([[0], np.cumsum(blob == 32)])[offsets]
        self._longest = int(np.diff(spaces).max()) + 1 if len(self._keys) else 0

    def add(self, vertex: int, title: str) -> None:
        keys = title_keys(title)
        for key, number in zip(keys, self._keys.ids(keys, add=True).tolist(), strict=True):
            self._added.setdefault(number, []).append(vertex)
            self._longest = max(self._longest, key.count(" ") + 1)

    def __len__(self) -> int:
        return len(self._keys)

    def _vertices_of(self, number: int) -> list[int]:
        saved = self._vertices[self._starts[number] : self._starts[number + 1]].tolist() \
            if number + 1 < len(self._starts) else []
        return saved + self._added.get(number, [])

    def arrays(self) -> dict[str, np.ndarray]:
        """The index as arrays (``hippo.memory.persist``): keys as space-joined words, and each
        key's vertices as one run of ``vertices`` starting at ``starts[i]``."""
        n = len(self._keys)
        saved = np.repeat(np.arange(len(self._starts) - 1), np.diff(self._starts))
        added = [(number, v) for number, vs in self._added.items() for v in vs]
        owners = np.concatenate([saved, np.array([a for a, _ in added], dtype=np.int64)])
        vertices = np.concatenate([self._vertices, np.array([v for _, v in added], dtype=np.int64)])
        order = np.argsort(owners, kind="stable")  # each key's saved vertices first, then those added
        return {"keys": np.array(self._keys.table.to_list(), dtype=np.str_),
                "starts": np.concatenate([[0], np.cumsum(np.bincount(owners, minlength=n))]).astype(np.int64),
                "vertices": vertices[order]}

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> TitleIndex:
        if not arrays:
            return cls()
        table = StringTable()
        table.append(arrays["keys"].tolist())
        return cls(StringIds(table), arrays["starts"], arrays["vertices"])

    def matches(self, query: str) -> dict[int, tuple[str, ...]]:
        """Passage vertex -> the (longest) title words of it the query names.

        Matches nested inside a longer match are dropped ("Pearl Jam" inside
        "Brother (Pearl Jam song)" is still a match; "Love" inside "Hello Love" is not).
        """
        if not len(self._keys):
            return {}
        runs = _runs(_word_spans(query), self._longest)
        longest: dict[int, tuple[int, str, int]] = {}  # start -> (end, key, number): the longest title there
        for (start, end, key), number in zip(runs, self._keys.ids([k for *_, k in runs]).tolist(), strict=True):
            if number >= 0 and end > longest.get(start, (0,))[0]:
                longest[start] = (end, key, number)
        found = [(start, end, key, number) for start, (end, key, number) in longest.items()]
        kept = [f for f in found if not any(o[0] <= f[0] and f[1] <= o[1] and o != f for o in found)]
        out: dict[int, tuple[str, ...]] = {}
        for _, _, key, number in kept:
            words = tuple(key.split())
            for v in self._vertices_of(number):
                if len(words) > len(out.get(v, ())):
                    out[v] = words
        return out


def title_phrases(query: str) -> list[str]:
    """Every run of the query's words that could name a whole title (``TitleIndex.matches``): up to
    ``MAX_TITLE_WORDS`` words, one word only when written as a name. A store-side reader looks
    these up as phrases in its full-text index, then matches the titles it found exactly."""
    return list(dict.fromkeys(key for *_, key in _runs(_word_spans(query), MAX_TITLE_WORDS)))


def _runs(spans: list[tuple[str, str]], longest: int) -> list[tuple[int, int, str]]:
    """(start, end, the words joined) for each run of up to ``longest`` words that could name a title."""
    words = [w for w, _ in spans]
    return [(start, start + length, " ".join(words[start : start + length])) for start in range(len(words))
            for length in range(1, min(longest, len(words) - start) + 1)
            if length > 1 or _written_as_name(spans, start)]


def _word_spans(query: str) -> list[tuple[str, str]]:
    """(normalized word, word as written) for each word of the query."""
    out = []
    for raw in query.split():
        key = normalize(raw)
        for part in key.split():  # "Hello Love's" -> "hello", "love", "s"
            out.append((part, raw))
    return out


def _written_as_name(spans: list[tuple[str, str]], i: int) -> bool:
    raw = spans[i][1].lstrip("\"'(“‘")
    if i == 0 or not raw:
        return False
    return raw[0].isupper() or raw[0].isdigit()


def title_seeds(titles: TitleIndex, query: str, visible_passage) -> dict[int, float]:
    """Passage vertex -> reset weight (max 1) for the visible passages whose title the query names.

    A name shared by several passages ("Brother (film)", "Brother (Pearl Jam
    song)") splits its weight among them: the passage prior tells them apart.
    """
    matched = {v: key for v, key in titles.matches(query).items() if visible_passage[v]}
    sharing: dict[tuple[str, ...], int] = defaultdict(int)
    for key in matched.values():
        sharing[key] += 1
    return {v: 1.0 / sharing[key] for v, key in matched.items()}
