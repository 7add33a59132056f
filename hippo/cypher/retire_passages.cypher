// Tombstone live passages (never delete), and their facts: they leave every read at once and can
// come back.
// $rows: [passage id]
UNWIND $rows AS id
MATCH (p:Passage {id: id})
WHERE p.forgotten_at IS NULL
SET p.forgotten_at = $at, p.forgotten_reason = $reason
WITH p
CALL (p) { MATCH ()-[r:RELATES {passage_id: p.id}]->() SET r.forgotten_at = p.forgotten_at }
