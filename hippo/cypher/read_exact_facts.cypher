// Every visible fact scored exactly (see read_exact_passages.cypher).
// $query: [float], $k: int, $spaces: [string] or null
MATCH (p:Passage)
WHERE p.forgotten_at IS NULL AND ($spaces IS NULL OR p.space IN $spaces)
MATCH (s:Entity)-[r:RELATES {passage_id: p.id}]->(o:Entity)
MATCH (v:Vector {hash: r.embed_hash})
WITH r, s, o, vector.similarity.cosine(v.embedding, $query) AS score
ORDER BY score DESC, r.seq
WITH collect([r.id, score, s.id, o.id, r.passage_id, r.embed_hash]) AS scored
RETURN scored[0..$k] AS found, scored[-1..] AS bottom
