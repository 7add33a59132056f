// Nodes' strengths over every edge, as read_neighbours.cypher gives them with the edges that reach
// them (the same expressions, so the same floats): what a reader's cached edges to a node a write
// changed are brought up to date with (hippo.memory.store_cache.ReaderCache).
// $ids: [id], $mention_weight, $relation_weight
CALL () {
  UNWIND $ids AS id
  MATCH (p:Passage {id: id})
  RETURN id, $mention_weight * p.mention_count AS strength
  UNION ALL
  UNWIND $ids AS id
  MATCH (e:Entity {id: id})
  RETURN id, $mention_weight * e.mention_count + $relation_weight * e.fact_count + e.synonym_weight AS strength
}
RETURN id, strength
