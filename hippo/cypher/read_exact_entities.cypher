// Every visible entity scored exactly (see read_exact_passages.cypher).
// $query: [float], $k: int, $spaces: [string] or null
MATCH (p:Passage)-[:MENTIONS]->(e:Entity)
WHERE p.forgotten_at IS NULL AND ($spaces IS NULL OR p.space IN $spaces)
WITH DISTINCT e
MATCH (v:Vector {hash: e.embed_hash})
WITH e, vector.similarity.cosine(v.embedding, $query) AS score
ORDER BY score DESC, e.seq
WITH collect([e.id, score]) AS scored
RETURN scored[0..$k] AS found, scored[-1..] AS bottom
