// Store-side BM25, step 1: candidates from the full-text index (Lucene ranks them with corpus-wide
// statistics; the reader rescores them with its own, see hippo.memory.store_source).
// $query: quoted words OR'ed (hippo.store.common.keyword_query), $k: int, $spaces: [string] or null
CALL db.index.fulltext.queryNodes('passage_text', $query) YIELD node, score
WHERE node.forgotten_at IS NULL AND ($spaces IS NULL OR node.space IN $spaces)
WITH node, score
ORDER BY score DESC, node.seq
LIMIT $k
RETURN node.id AS id, node.title AS title, node.text AS text
