// Store-side BM25, step 1: candidates from the passages' words (the passage_words index, the words
// hippo's BM25 counts; Lucene ranks them with corpus-wide statistics, the reader rescores them with
// its own, see hippo.memory.store_words).
// $query: quoted words OR'ed, $k: int, $spaces: [string] or null
CALL db.index.fulltext.queryNodes('passage_words', $query) YIELD node, score
WHERE node.forgotten_at IS NULL AND ($spaces IS NULL OR node.space IN $spaces)
WITH node, score
ORDER BY score DESC, node.seq
LIMIT $k
RETURN node.id AS id, coalesce(node.words, '') AS words
