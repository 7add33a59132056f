// Store-side recall: every visible passage scored exactly, the $k best and the lowest. O(passages the
// reader sees): for a reader that sees few (as the in-process index searches exactly below
// vector_exact_max), and when widening the vector index's answer past its bound found too few.
// $query: [float], $k: int, $spaces: [string] or null
MATCH (p:Passage)
WHERE p.forgotten_at IS NULL AND ($spaces IS NULL OR p.space IN $spaces)
MATCH (v:Vector {hash: p.embed_hash})
WITH p, vector.similarity.cosine(v.embedding, $query) AS score
ORDER BY score DESC, p.seq
WITH collect([p.id, score]) AS scored
RETURN scored[0..$k] AS found, scored[-1..] AS bottom
