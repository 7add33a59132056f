// Store-side title seeds: visible passages whose title holds one of the query's word runs as a
// phrase; the reader keeps those whose whole title the query names (hippo.memory.titles).
// $query: title:"..." phrases OR'ed, $k: int, $spaces: [string] or null
CALL db.index.fulltext.queryNodes('passage_text', $query) YIELD node, score
WHERE node.forgotten_at IS NULL AND ($spaces IS NULL OR node.space IN $spaces) AND node.title IS NOT NULL
WITH node, score
ORDER BY score DESC, node.seq
LIMIT $k
RETURN node.id AS id, node.title AS title
