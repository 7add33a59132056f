// benchmarks/frontier_reads.py: the frontier read up to stop 48 (hippo/cypher/read_neighbours.cypher then): each
// target's record id and its strength over every edge read with the edges (three properties of every
// target), one record, a list of [owner, entities, passages, relations, synonyms, strengths].
// $passages, $entities, $spaces, $mention_weight, $relation_weight, $everything
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
