// Bring tombstoned passages (and their facts) back into the live graph. $rows: [passage id]
UNWIND $rows AS id
MATCH (p:Passage {id: id})
WHERE p.forgotten_at IS NOT NULL
SET p.forgotten_at = null, p.forgotten_reason = null
WITH p
CALL (p) { MATCH ()-[r:RELATES {passage_id: p.id}]->() SET r.forgotten_at = null }
