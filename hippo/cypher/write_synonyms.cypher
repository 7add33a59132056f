// Synonym edges, stored once per pair in the direction given (the engine sends a < b);
// the score is only written when it differs. Each end's synonym_weight (the sum of its scores)
// follows. $rows: [{a, b, score}]
UNWIND $rows AS row
MATCH (a:Entity {id: row.a})
MATCH (b:Entity {id: row.b})
MERGE (a)-[s:SYNONYM]->(b)
  ON CREATE SET s.score = row.score, a.synonym_weight = coalesce(a.synonym_weight, 0.0) + row.score,
                b.synonym_weight = coalesce(b.synonym_weight, 0.0) + row.score
FOREACH (_ IN CASE WHEN s.score <> row.score THEN [1] ELSE [] END |
  SET a.synonym_weight = coalesce(a.synonym_weight, 0.0) + row.score - s.score,
      b.synonym_weight = coalesce(b.synonym_weight, 0.0) + row.score - s.score, s.score = row.score)
RETURN count(*) AS matched
