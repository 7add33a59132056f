// Tombstone live passages (never delete), and their facts: they leave every read at once and can
// come back. Their spaces count them no longer.
// $rows: [passage id]
UNWIND $rows AS id
MATCH (p:Passage {id: id})
WHERE p.forgotten_at IS NULL
SET p.forgotten_at = $at, p.forgotten_reason = $reason
WITH p
CALL (p) { MATCH ()-[r:RELATES {passage_id: p.id}]->() SET r.forgotten_at = p.forgotten_at }
WITH p.space AS name, count(p) AS passages, sum(coalesce(p.word_count, 0)) AS words
MERGE (s:Space {name: name})
SET s.live_passages = coalesce(s.live_passages, 0) - passages, s.live_words = coalesce(s.live_words, 0) - words
