// Passage -> entity mentions, idempotent. Rows whose ends are missing match nothing
// (the caller compares `matched` with what it sent and aborts).
// $rows: [{passage_id, entity_id}]
UNWIND $rows AS row
MATCH (p:Passage {id: row.passage_id})
MATCH (e:Entity {id: row.entity_id})
MERGE (p)-[:MENTIONS]->(e)
RETURN count(*) AS matched
