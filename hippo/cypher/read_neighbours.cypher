// Store-side PPR: the visible edges at one push wave's frontier, in one round trip, weighted as the
// in-process projection weighs them. A passage (live, in the reader's spaces) -> the entities it
// mentions; an entity -> the visible passages mentioning it, the other end of each fact read from a
// visible passage (one edge per fact, none to itself), and its synonyms when both ends are visible.
// One record, a list of [owner, entities, passages, relations, synonyms] (the driver's cost is per
// record). $passages: [id], $entities: [id], $spaces: [string] or null
CALL () {
  UNWIND $passages AS pid
  MATCH (p:Passage {id: pid})
  WHERE p.forgotten_at IS NULL AND ($spaces IS NULL OR p.space IN $spaces)
  RETURN pid AS owner, [(p)-[:MENTIONS]->(e:Entity) | e.id] AS entities, [] AS passages, [] AS relations,
         [] AS synonyms
  UNION ALL
  UNWIND $entities AS eid
  MATCH (e:Entity {id: eid})
  WITH eid, e, EXISTS {
    MATCH (q:Passage)-[:MENTIONS]->(e)
    WHERE q.forgotten_at IS NULL AND ($spaces IS NULL OR q.space IN $spaces)
  } AS seen
  RETURN eid AS owner, [] AS entities,
    [(p:Passage)-[:MENTIONS]->(e) WHERE p.forgotten_at IS NULL AND ($spaces IS NULL OR p.space IN $spaces)
     | p.id] AS passages,
    [(e)-[r:RELATES]-(o:Entity) WHERE o <> e AND EXISTS {
       MATCH (q:Passage {id: r.passage_id})
       WHERE q.forgotten_at IS NULL AND ($spaces IS NULL OR q.space IN $spaces)
     } | o.id] AS relations,
    [(e)-[s:SYNONYM]-(o:Entity) WHERE seen AND EXISTS {
       MATCH (q:Passage)-[:MENTIONS]->(o)
       WHERE q.forgotten_at IS NULL AND ($spaces IS NULL OR q.space IN $spaces)
     } | [o.id, s.score]] AS synonyms
}
RETURN collect([owner, entities, passages, relations, synonyms]) AS edges
