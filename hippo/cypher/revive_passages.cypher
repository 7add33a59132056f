// Bring tombstoned passages back into the live graph. $rows: [passage id]
UNWIND $rows AS id
MATCH (p:Passage {id: id})
WHERE p.forgotten_at IS NOT NULL
SET p.forgotten_at = null, p.forgotten_reason = null
