// BM25 keyword search over passage title + text. $query is built by the store from
// quoted words only, so user text is never Lucene syntax. $spaces: [string] or null (all).
CALL db.index.fulltext.queryNodes('passage_text', $query) YIELD node, score
WHERE node.forgotten_at IS NULL AND ($spaces IS NULL OR node.space IN $spaces)
RETURN node.id AS id, score
ORDER BY score DESC
LIMIT $k
