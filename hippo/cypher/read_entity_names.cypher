// Per entity: its key and the title and text of the first visible passage (store order) that
// mentions it, to spell its name as the reader's own passages do (hippo.memory.names).
// $ids: [entity id], $spaces
UNWIND $ids AS eid
MATCH (e:Entity {id: eid})
CALL (e) {
  OPTIONAL MATCH (p:Passage)-[:MENTIONS]->(e)
  WHERE p.forgotten_at IS NULL AND ($spaces IS NULL OR p.space IN $spaces)
  WITH p ORDER BY p.seq LIMIT 1
  RETURN p.title AS title, p.text AS text
}
RETURN eid AS id, e.key AS key, title, text
