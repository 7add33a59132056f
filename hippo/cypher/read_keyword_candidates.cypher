// Store-side BM25, step 1: candidates from the passages' words (the passage_words index, the words
// hippo's BM25 counts; Lucene ranks them with corpus-wide statistics, the reader rescores them with
// its own, see hippo.memory.store_words). Each candidate comes back as its length in words and how
// often each of $terms occurs in it, not its text: a few numbers instead of a few hundred bytes.
// A word is counted in `words` with every space doubled, so occurrences never share a space.
// $options: {} for every match, or {limit: n} when every passage the index holds is visible to the
// reader, so Lucene hands over only its n best instead of every match to be sorted here (100k
// synthetic passages: ~4x faster, README). Lucene's scores tie often (it keeps a passage's length in one
// byte) and ties are broken by seq here: `lowest` (the last score handed over) and `kth` (the
// $k-th best's) let the caller ask again, wider, until no passage tied with the $k-th was left out.
// $query: quoted words OR'ed, $terms: [word] (no spaces), $k: int, $spaces: [string] or null
CALL db.index.fulltext.queryNodes('passage_words', $query, $options) YIELD node, score
WITH collect([node, score]) AS matched
WITH matched, size(matched) AS returned, reduce(low = null, m IN matched | CASE WHEN low IS NULL OR m[1] < low
                                                                          THEN m[1] ELSE low END) AS lowest
UNWIND matched AS pair
WITH pair[0] AS node, pair[1] AS score, returned, lowest
WHERE node.forgotten_at IS NULL AND ($spaces IS NULL OR node.space IN $spaces)
WITH node, score, returned, lowest
ORDER BY score DESC, node.seq
LIMIT $k
WITH collect([node, score]) AS best, returned, lowest
UNWIND best AS pair
WITH pair[0] AS node, best[-1][1] AS kth, returned, lowest
WITH node, kth, returned, lowest, ' ' + replace(coalesce(node.words, ''), ' ', '  ') + ' ' AS padded
RETURN collect([node.id, coalesce(node.word_count, 0),
                [t IN $terms | (size(padded) - size(replace(padded, ' ' + t + ' ', ''))) / (size(t) + 2)]]) AS found,
       kth, returned, lowest
