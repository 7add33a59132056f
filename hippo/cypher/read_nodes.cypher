// Which of these ids are a visible passage or a visible entity (with the number of visible passages
// mentioning it). Others match nothing: hidden and missing look alike. $ids: [id], $spaces
UNWIND $ids AS rid
OPTIONAL MATCH (p:Passage {id: rid})
WHERE p.forgotten_at IS NULL AND ($spaces IS NULL OR p.space IN $spaces)
OPTIONAL MATCH (e:Entity {id: rid})
WITH rid, p, CASE WHEN e IS NULL THEN 0 ELSE COUNT {
  MATCH (q:Passage)-[:MENTIONS]->(e)
  WHERE q.forgotten_at IS NULL AND ($spaces IS NULL OR q.space IN $spaces)
} END AS passages
WHERE p IS NOT NULL OR passages > 0
RETURN rid AS id, p IS NOT NULL AS passage, passages
