// Tombstone live passages (never delete): they leave every read at once and can come back.
// $rows: [passage id]
UNWIND $rows AS id
MATCH (p:Passage {id: id})
WHERE p.forgotten_at IS NULL
SET p.forgotten_at = $at, p.forgotten_reason = $reason
