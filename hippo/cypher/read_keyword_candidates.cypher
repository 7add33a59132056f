// Store-side BM25, step 1: candidates from the passages' words (the passage_words index, the words
// hippo's BM25 counts; Lucene ranks them with corpus-wide statistics, the reader rescores them with
// its own, see hippo.memory.store_words). Each candidate comes back as its length in words and how
// often each of $terms occurs in it, not its text: a few numbers instead of a few hundred bytes.
// A word is counted in `words` with every space doubled, so occurrences never share a space.
// $query: quoted words OR'ed, $terms: [word] (no spaces), $k: int, $spaces: [string] or null
CALL db.index.fulltext.queryNodes('passage_words', $query) YIELD node, score
WHERE node.forgotten_at IS NULL AND ($spaces IS NULL OR node.space IN $spaces)
WITH node, score
ORDER BY score DESC, node.seq
LIMIT $k
WITH node, ' ' + replace(coalesce(node.words, ''), ' ', '  ') + ' ' AS padded
RETURN collect([node.id, coalesce(node.word_count, 0),
                [t IN $terms | (size(padded) - size(replace(padded, ' ' + t + ' ', ''))) / (size(t) + 2)]]) AS found
