// A first look: how many records of each kind, and the entities most passages mention
// (the graph's hubs). No parameters.
CALL () {
  MATCH (e:Entity)<-[:MENTIONS]-(p:Passage)
  WHERE p.forgotten_at IS NULL
  RETURN e.name AS entity, count(p) AS passages
  ORDER BY passages DESC, entity
  LIMIT 25
}
RETURN entity, passages,
       COUNT { (:Document) } AS documents, COUNT { (:Passage) } AS all_passages,
       COUNT { (:Entity) } AS entities, COUNT { ()-[:RELATES]->() } AS facts;
