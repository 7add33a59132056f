// Passage -> entity mentions, idempotent; a new one counts at both ends (mention_count). Rows
// whose ends are missing match nothing (the caller compares `matched` with what it sent and aborts).
// $rows: [{passage_id, entity_id}]
UNWIND $rows AS row
MATCH (p:Passage {id: row.passage_id})
MATCH (e:Entity {id: row.entity_id})
MERGE (p)-[:MENTIONS]->(e)
  ON CREATE SET p.mention_count = coalesce(p.mention_count, 0) + 1,
                e.mention_count = coalesce(e.mention_count, 0) + 1
RETURN count(*) AS matched
