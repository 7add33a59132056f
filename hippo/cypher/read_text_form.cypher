// A reader's view as text (memory/build's `tokens`): the facts of live passages in the reader's
// spaces and the distinct entities those passages mention, each fact line ("subject predicate
// object") and entity name counted as hippo.text.approx_tokens counts it. Computed in the server, so
// nothing but three numbers crosses the wire; O(what the reader sees), read once per store revision.
// $spaces: [string] or null
CALL () {
  MATCH ()-[r:RELATES]->()
  WHERE r.forgotten_at IS NULL AND ($spaces IS NULL OR r.space IN $spaces)
  WITH size(r.subject + ' ' + r.predicate + ' ' + r.object) AS length
  RETURN count(*) AS facts, sum((length + 3) / 4) AS fact_tokens
}
CALL () {
  MATCH (p:Passage)-[:MENTIONS]->(e:Entity)
  WHERE p.forgotten_at IS NULL AND ($spaces IS NULL OR p.space IN $spaces)
  WITH DISTINCT e
  WITH size(e.name) AS length
  RETURN count(*) AS entities, sum(CASE length WHEN 0 THEN 0 ELSE (length + 3) / 4 END) AS entity_tokens
}
RETURN facts, entities, fact_tokens + entity_tokens AS tokens
