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
from dataclasses import dataclass, field

import numpy as np

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


@dataclass
class TitleIndex:
    """Normalized title words -> graph vertices of the passages with that title."""

    _vertices: dict[tuple[str, ...], list[int]] = field(default_factory=lambda: defaultdict(list))
    _longest: int = 0

    def add(self, vertex: int, title: str) -> None:
        for key in title_keys(title):
            words = tuple(key.split())
            self._vertices[words].append(vertex)
            self._longest = max(self._longest, len(words))

    def __len__(self) -> int:
        return len(self._vertices)

    def arrays(self) -> dict[str, np.ndarray]:
        """The index as arrays (``hippo.memory.persist``): keys as space-joined words, and each
        key's vertices as one run of ``vertices`` starting at ``starts[i]``."""
        keys = list(self._vertices)
        counts = np.array([len(self._vertices[k]) for k in keys], dtype=np.int64)
        vertices = [v for k in keys for v in self._vertices[k]]
        return {"keys": np.array([" ".join(k) for k in keys], dtype=np.str_),
                "starts": np.concatenate([[0], np.cumsum(counts)]).astype(np.int64),
                "vertices": np.array(vertices, dtype=np.int64)}

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> TitleIndex:
        index = cls()
        if not arrays:
            return index
        starts, vertices = arrays["starts"], arrays["vertices"]
        for i, key in enumerate(arrays["keys"].tolist()):
            words = tuple(key.split())
            index._vertices[words] = vertices[starts[i] : starts[i + 1]].tolist()
            index._longest = max(index._longest, len(words))
        return index

    def matches(self, query: str) -> dict[int, tuple[str, ...]]:
        """Passage vertex -> the (longest) title words of it the query names.

        Matches nested inside a longer match are dropped ("Pearl Jam" inside
        "Brother (Pearl Jam song)" is still a match; "Love" inside "Hello Love" is not).
        """
        if not self._vertices:
            return {}
        spans = _word_spans(query)
        words = [w for w, _ in spans]
        found: list[tuple[int, int, tuple[str, ...]]] = []
        for start in range(len(words)):
            for length in range(min(self._longest, len(words) - start), 0, -1):
                key = tuple(words[start : start + length])
                if key in self._vertices and (length > 1 or _written_as_name(spans, start)):
                    found.append((start, start + length, key))
                    break  # the longest title starting here
        kept = [f for f in found if not any(o[0] <= f[0] and f[1] <= o[1] and o != f for o in found)]
        out: dict[int, tuple[str, ...]] = {}
        for _, _, key in kept:
            for v in self._vertices[key]:
                if len(key) > len(out.get(v, ())):
                    out[v] = key
        return out


def title_phrases(query: str) -> list[str]:
    """Every run of the query's words that could name a whole title (``TitleIndex.matches``): up to
    ``MAX_TITLE_WORDS`` words, one word only when written as a name. A store-side reader looks
    these up as phrases in its full-text index, then matches the titles it found exactly."""
    spans = _word_spans(query)
    words = [w for w, _ in spans]
    found = [" ".join(words[start : start + length]) for start in range(len(words))
             for length in range(1, min(MAX_TITLE_WORDS, len(words) - start) + 1)
             if length > 1 or _written_as_name(spans, start)]
    return list(dict.fromkeys(found))


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
