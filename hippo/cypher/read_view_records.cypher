// The ids of what a reader's view holds (hippo.memory.walk.ViewRecords): the distinct entities its
// live passages mention and the facts read from them, each in store order. O(what the reader
// sees): the user-context block reads one user's space. $spaces: [string] or null
CALL () {
  MATCH (p:Passage)-[:MENTIONS]->(e:Entity)
  WHERE p.forgotten_at IS NULL AND ($spaces IS NULL OR p.space IN $spaces)
  WITH DISTINCT e
  ORDER BY e.seq
  RETURN collect(e.id) AS entities
}
CALL () {
  MATCH (:Entity)-[r:RELATES]->(:Entity)
  WHERE r.forgotten_at IS NULL AND ($spaces IS NULL OR r.space IN $spaces)
  WITH r
  ORDER BY r.seq
  RETURN collect(r.id) AS facts
}
RETURN entities, facts
