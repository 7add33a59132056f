// What retiring these passages takes out of a reader's view, answered as the in-process
// projection answers it (hippo.graph.projection.Projection.impact): of the live visible ones,
// the facts read from them (passage by passage in the caller's order, each in store order); the
// entities no other live visible passage mentions (store order); the edges leaving the walk by
// kind: mentions, relations, synonyms of a lost entity to a visible one or to another lost one
// (that pair once). $ids: [passage id], $spaces: [string] or null
UNWIND range(0, size($ids) - 1) AS i
MATCH (p:Passage {id: $ids[i]})
WHERE p.forgotten_at IS NULL AND ($spaces IS NULL OR p.space IN $spaces)
WITH p, min(i) AS first
ORDER BY first
WITH collect(p) AS gone
CALL (gone) {
  UNWIND range(0, size(gone) - 1) AS j
  MATCH (:Entity)-[r:RELATES {passage_id: gone[j].id}]->(:Entity)
  WITH r ORDER BY j, r.seq
  RETURN collect(r.id) AS facts
}
CALL (gone) {
  UNWIND gone AS p
  MATCH (p)-[:MENTIONS]->(e:Entity)
  WITH e, count(*) AS leaving
  WITH e, leaving, COUNT {
    MATCH (q:Passage)-[:MENTIONS]->(e)
    WHERE q.forgotten_at IS NULL AND ($spaces IS NULL OR q.space IN $spaces)
  } AS support
  ORDER BY e.seq
  RETURN sum(leaving) AS mentions, collect(CASE WHEN support <= leaving THEN e END) AS lost
}
CALL (lost) {
  UNWIND lost AS e
  MATCH (e)-[:SYNONYM]-(t:Entity)
  WITH t, t IN lost AS both
  WHERE both OR EXISTS {
    MATCH (q:Passage)-[:MENTIONS]->(t)
    WHERE q.forgotten_at IS NULL AND ($spaces IS NULL OR q.space IN $spaces)
  }
  RETURN sum(CASE WHEN both THEN 0.5 ELSE 1.0 END) AS synonyms
}
RETURN facts, [e IN lost | e.id] AS entities, mentions, size(facts) AS relations, toInteger(synonyms) AS synonyms
