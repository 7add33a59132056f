// Per entity: the visible passages mentioning it (its specificity). $ids: [entity id], $spaces
UNWIND $ids AS eid
MATCH (e:Entity {id: eid})
RETURN eid AS id, COUNT {
  MATCH (p:Passage)-[:MENTIONS]->(e)
  WHERE p.forgotten_at IS NULL AND ($spaces IS NULL OR p.space IN $spaces)
} AS passages
