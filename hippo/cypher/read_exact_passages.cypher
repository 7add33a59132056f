// Store-side recall, when widening the vector index's answer past its bound found too few: every
// visible passage scored exactly. O(passages the reader sees): only reached for a reader whose
// spaces hold a small share of the index. $query: [float], $k: int, $spaces: [string] or null
MATCH (p:Passage)
WHERE p.forgotten_at IS NULL AND ($spaces IS NULL OR p.space IN $spaces)
MATCH (v:Vector {hash: p.embed_hash})
WITH p, vector.similarity.cosine(v.embedding, $query) AS score
ORDER BY score DESC, p.seq
LIMIT $k
RETURN collect([p.id, score]) AS found
