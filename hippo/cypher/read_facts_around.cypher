// Clue expansion, store-side (hippo.memory.clues.neighbour_candidates): the facts around given
// entities, closest to the query first. A fact is visible when the passage it was read from is live
// and in the reader's spaces (its RELATES keeps both); a fact from an entity to itself is no hop; a
// fact without a vector cannot be scored and is left out, as in process.
// One record: the $k best as [fact id, subject id, object id, passage id, text hash, (1 + cos) / 2].
// $ids: [entity id], $exclude: [fact id], $query: [float], $k: int, $spaces: [string] or null
UNWIND $ids AS eid
MATCH (:Entity {id: eid})-[r:RELATES]-(:Entity)
WHERE r.forgotten_at IS NULL AND r.space IS NOT NULL AND ($spaces IS NULL OR r.space IN $spaces)
  AND NOT r.id IN $exclude
WITH DISTINCT r
WITH r, startNode(r) AS s, endNode(r) AS o
WHERE s <> o
MATCH (v:Vector {hash: r.embed_hash})
WITH r, s, o, vector.similarity.cosine(v.embedding, $query) AS score
ORDER BY score DESC, r.id
LIMIT $k
RETURN collect([r.id, s.id, o.id, r.passage_id, r.embed_hash, score]) AS facts
