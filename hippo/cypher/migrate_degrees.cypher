// Schema version 3 -> 4: every passage and entity gets the degree counters the writes now keep
// (schema.cypher says what they count). Idempotent, in batches: a migration cut short is
// finished by the next open, and the schema version moves to 4 only after the last statement.
MATCH (p:Passage) WHERE p.mention_count IS NULL
CALL (p) { SET p.mention_count = COUNT { (p)-[:MENTIONS]->(:Entity) } } IN TRANSACTIONS OF 5000 ROWS;
MATCH (e:Entity) WHERE e.synonym_weight IS NULL
CALL (e) {
  SET e.mention_count = COUNT { (:Passage)-[:MENTIONS]->(e) },
      e.fact_count = COUNT { (e)-[:RELATES]->(:Entity) } + COUNT { (:Entity)-[:RELATES]->(e) },
      e.synonym_weight = reduce(total = 0.0, s IN [(e)-[s:SYNONYM]-(:Entity) | s.score] | total + s)
} IN TRANSACTIONS OF 5000 ROWS;
