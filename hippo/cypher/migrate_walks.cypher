// Schema version 3 -> 4: what a store-side walk reads at a node without another lookup, as the
// writes now keep it (schema.cypher): every passage's and entity's degree counters, and each
// fact's visibility (its passage's space and forgotten_at). Idempotent, in batches: a migration
// cut short is finished by the next open, and the schema version moves to 4 only after the last
// statement.
MATCH (p:Passage) WHERE p.mention_count IS NULL
CALL (p) { SET p.mention_count = COUNT { (p)-[:MENTIONS]->(:Entity) } } IN TRANSACTIONS OF 5000 ROWS;
MATCH (e:Entity) WHERE e.synonym_weight IS NULL
CALL (e) {
  SET e.mention_count = COUNT { (:Passage)-[:MENTIONS]->(e) },
      e.fact_count = COUNT { (e)-[:RELATES]->(:Entity) } + COUNT { (:Entity)-[:RELATES]->(e) },
      e.synonym_weight = reduce(total = 0.0, s IN [(e)-[s:SYNONYM]-(:Entity) | s.score] | total + s)
} IN TRANSACTIONS OF 5000 ROWS;
MATCH ()-[r:RELATES]->() WHERE r.space IS NULL
CALL (r) { MATCH (p:Passage {id: r.passage_id}) SET r.space = p.space, r.forgotten_at = p.forgotten_at }
  IN TRANSACTIONS OF 5000 ROWS;
