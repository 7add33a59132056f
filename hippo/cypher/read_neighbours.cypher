// Store-side PPR: the visible edges at one push wave's frontier, in one round trip, weighted as the
// in-process projection weighs them. A passage (live, in the reader's spaces) -> the entities it
// mentions; an entity -> the visible passages mentioning it, the other end of each fact read from a
// visible passage (one edge per fact, none to itself; a fact keeps its passage's space and
// forgotten_at, so no passage is looked up), and its synonyms when both ends are visible.
// Each target comes with its strength over every edge (schema.cypher's degree counters; null in a
// store not migrated yet), so the walk can leave a node unread that it would not push.
// One record, a list of [owner, entities, passages, relations, synonyms ([id, score]), strengths
// (of entities, passages, relations, synonyms in that order)] (the driver's cost is per record).
// $everything: the reader sees every space and no passage is forgotten, so an entity is visible when
// any passage mentions it (its degree counter, not a look at its passages: ~20 % of a wave's time),
// and no passage's or fact's own visibility is read (100k passages: ~9 % less time waited on these reads).
// $passages: [id], $entities: [id], $spaces: [string] or null, $mention_weight, $relation_weight,
// $everything: bool
CALL () {
  UNWIND $passages AS pid
  MATCH (p:Passage {id: pid})
  WHERE p.forgotten_at IS NULL AND ($spaces IS NULL OR p.space IN $spaces)
  WITH pid, [(p)-[:MENTIONS]->(e:Entity) | [e.id, $mention_weight * e.mention_count
                                                   + $relation_weight * e.fact_count + e.synonym_weight]] AS mentioned
  RETURN pid AS owner, [m IN mentioned | m[0]] AS entities, [] AS passages, [] AS relations, [] AS synonyms,
         [m IN mentioned | m[1]] AS strengths
  UNION ALL
  UNWIND $entities AS eid
  MATCH (e:Entity {id: eid})
  WITH eid, e, CASE WHEN $everything THEN e.mention_count > 0 ELSE EXISTS {
    MATCH (q:Passage)-[:MENTIONS]->(e)
    WHERE q.forgotten_at IS NULL AND ($spaces IS NULL OR q.space IN $spaces)
  } END AS seen
  WITH eid,
    [(p:Passage)-[:MENTIONS]->(e)
       WHERE $everything OR (p.forgotten_at IS NULL AND ($spaces IS NULL OR p.space IN $spaces))
     | [p.id, $mention_weight * p.mention_count]] AS passages,
    [(e)-[r:RELATES]-(o:Entity) WHERE o <> e AND ($everything OR (r.forgotten_at IS NULL AND r.space IS NOT NULL
       AND ($spaces IS NULL OR r.space IN $spaces)))
     | [o.id, $mention_weight * o.mention_count + $relation_weight * o.fact_count + o.synonym_weight]] AS relations,
    [(e)-[s:SYNONYM]-(o:Entity) WHERE seen AND (CASE WHEN $everything THEN o.mention_count > 0 ELSE EXISTS {
       MATCH (q:Passage)-[:MENTIONS]->(o)
       WHERE q.forgotten_at IS NULL AND ($spaces IS NULL OR q.space IN $spaces)
     } END) | [o.id, s.score, $mention_weight * o.mention_count + $relation_weight * o.fact_count + o.synonym_weight]]
      AS synonyms
  RETURN eid AS owner, [] AS entities, [x IN passages | x[0]] AS passages, [x IN relations | x[0]] AS relations,
         [x IN synonyms | [x[0], x[1]]] AS synonyms,
         [x IN passages | x[1]] + [x IN relations | x[1]] + [x IN synonyms | x[2]] AS strengths
}
RETURN collect([owner, entities, passages, relations, synonyms, strengths]) AS edges
