"""Keyword scores and title seeds for a store-side reader (``hippo.memory.store_source``).

BM25 keeps the in-process rule (``hippo.memory.keywords``): hidden spaces move
no statistic. Each passage keeps the words that index counts (``words``,
``hippo.text.keyword_tokens``), indexed by Lucene split on white space only
(``passage_words``), so the store's postings hold the in-process words: no stop
word dropped, diacritics folded, "Blekinge's" read as "blekinge" and "s". The
index only proposes candidates, ranked with its corpus-wide statistics; each
candidate is then scored here with the reader's own: the document count and
summed word count are those of the live passages in the reader's spaces
(``Neo4jReader.statistics``, read once per store revision), and each word's
document frequency is counted over those passages only
(``read_keyword_frequencies.cypher``), up to half of them: a word in half or
more has the floor IDF anyway; the counts are kept with the reader's cache for
the revision (``ReaderCache.frequencies``), so a word is counted once. Scores
are then the in-process scores; which passages are proposed is Lucene's
ranking, so the last of the ``limit`` best can differ (2Wiki, 100 questions,
top 200: 0.885 of the in-process set with 200 candidates, 0.989 with 400,
0.998 with 600; before the words were kept, Lucene's analyzer dropped stop
words and split differently, and it was 0.82).

Title seeds: the query's word runs that could name a title are looked up as
phrases in the index's title field, and the titles found are matched exactly
by ``hippo.memory.titles``, as in process.
"""

from __future__ import annotations

import math

import numpy as np

from hippo.memory.ahead import Ahead
from hippo.memory.keywords import IDF_FLOOR, K1, B
from hippo.memory.titles import TitleIndex, title_phrases
from hippo.memory.titles import title_seeds as matched_titles
from hippo.store.neo4j.reader import Neo4jReader, Statistics
from hippo.text import keyword_tokens

CANDIDATES = 3  # full-text candidates read per score wanted (see above)
TITLE_CANDIDATES = 500  # passages whose title holds one of the query's phrases, read to match exactly


def start_keyword_reads(ahead: Ahead, reader: Neo4jReader, statistics: Statistics, query: str, limit: int,
                        frequencies: dict[str, int]) -> None:
    """Start the two reads ``keyword_scores`` takes, the candidates and the document frequencies of
    the words not counted before, so Neo4j answers them side by side."""
    terms = _terms(query)
    if not terms or not statistics.passages or limit <= 0:
        return
    ahead.start(("keyword candidates", query, limit), _candidates, reader, statistics, terms, limit)
    ahead.start(("keyword frequencies", query), _frequencies, reader, statistics, _uncounted(terms, frequencies))


def keyword_scores(reader: Neo4jReader, statistics: Statistics, query: str, limit: int,
                   frequencies: dict[str, int] | None = None, ahead: Ahead | None = None) -> list[tuple[str, float]]:
    """The ``limit`` best visible passages by BM25 over the reader's statistics: (id, score), best first.
    ``frequencies``: document frequencies read before for this reader and revision (quoted word ->
    count), used and added to; words recur across queries, so most recalls then skip that read.
    ``ahead``: where ``start_keyword_reads`` started the reads (else they run now)."""
    terms = _terms(query)
    documents = statistics.passages
    if not terms or not documents or limit <= 0:
        return []
    ahead = ahead if ahead is not None else Ahead()
    frequency = frequencies if frequencies is not None else {}
    # taken even when not needed, so no read is left behind; words counted since it started are kept
    found = ahead.take(("keyword frequencies", query), _frequencies, reader, statistics, _uncounted(terms, frequency))
    candidates = ahead.take(("keyword candidates", query, limit), _candidates, reader, statistics, terms, limit)
    for word, count in found.items():
        frequency.setdefault(word, count)
    if not candidates:
        return []
    idf = {}
    for t in terms:
        df = frequency.get(_quoted(t), 0)
        if df > 0:
            idf[t] = max(math.log((documents - df + 0.5) / (df + 0.5)), IDF_FLOOR)
    average = statistics.words / documents or 1.0
    weights = np.array([idf.get(t, 0.0) for t in terms])
    counts = np.array([c for _, _, c in candidates], dtype=np.float64).reshape(len(candidates), len(terms))
    norm = K1 * (1 - B + B * np.array([n for _, n, _ in candidates], dtype=np.float64) / average)
    scores = (weights * counts * (K1 + 1) / (counts + norm[:, None])).sum(axis=1)
    order = [i for i in np.argsort(-scores, kind="stable")[:limit].tolist() if scores[i] > 0]
    return [(candidates[i][0], float(scores[i])) for i in order]


def _terms(query: str) -> list[str]:
    return list(dict.fromkeys(keyword_tokens(query)))


def _quoted(term: str) -> str:
    return f'"{term}"'  # words are \w+ runs: no quote, no Lucene syntax


def _uncounted(terms: list[str], frequencies: dict[str, int]) -> list[str]:
    return [_quoted(t) for t in terms if _quoted(t) not in frequencies]


def _candidates(reader: Neo4jReader, statistics: Statistics, terms: list[str],
                limit: int) -> list[tuple[str, int, list[int]]]:
    return reader.keyword_candidates(" OR ".join(map(_quoted, terms)), terms, CANDIDATES * limit,
                                     everything=statistics.whole)


def _frequencies(reader: Neo4jReader, statistics: Statistics, quoted: list[str]) -> dict[str, int]:
    return reader.document_frequencies(quoted, statistics.passages // 2 + 1,
                                       everything=statistics.whole)


def title_seeds(reader: Neo4jReader, query: str) -> dict[str, float]:
    """Passage id -> reset weight for the visible passages whose title the query names."""
    phrases = title_phrases(query)
    if not phrases:
        return {}
    found = reader.title_candidates(" OR ".join(f'title:"{p}"' for p in phrases), TITLE_CANDIDATES)
    index = TitleIndex()
    for i, (_, title) in enumerate(found):
        index.add(i, title)
    seeds = matched_titles(index, query, _Everything())
    return {found[i][0]: w for i, w in seeds.items()}


class _Everything:
    """Every candidate is visible: the reader's query only returned visible passages."""

    def __getitem__(self, _: object) -> bool:
        return True
