// Synonym edges, stored once per pair in the direction given (the engine sends a < b);
// the score is only written when it differs. $rows: [{a, b, score}]
UNWIND $rows AS row
MATCH (a:Entity {id: row.a})
MATCH (b:Entity {id: row.b})
MERGE (a)-[s:SYNONYM]->(b)
  ON CREATE SET s.score = row.score
FOREACH (_ IN CASE WHEN s.score <> row.score THEN [1] ELSE [] END | SET s.score = row.score)
RETURN count(*) AS matched
