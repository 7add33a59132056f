// Per entity: its key and the title and text of the first visible passage (store order) that
// mentions it, to spell its name as the reader's own passages do (hippo.memory.names).
// $everything: as for read_entity_counts.cypher, every mentioning passage is visible, so none's
// forgotten_at or space is read (each a read to the end of a live passage's property chain).
// $ids: [entity id], $spaces, $everything
UNWIND $ids AS eid
MATCH (e:Entity {id: eid})
CALL (e) {
  OPTIONAL MATCH (p:Passage)-[:MENTIONS]->(e)
  WHERE $everything OR (p.forgotten_at IS NULL AND ($spaces IS NULL OR p.space IN $spaces))
  WITH p ORDER BY p.seq LIMIT 1
  RETURN p.title AS title, p.text AS text
}
RETURN eid AS id, e.key AS key, title, text
