// Bring tombstoned passages (and their facts) back into the live graph, and into their spaces'
// counts. $rows: [passage id]
UNWIND $rows AS id
MATCH (p:Passage {id: id})
WHERE p.forgotten_at IS NOT NULL
SET p.forgotten_at = null, p.forgotten_reason = null
WITH p
CALL (p) { MATCH ()-[r:RELATES {passage_id: p.id}]->() SET r.forgotten_at = null }
WITH p.space AS name, count(p) AS passages, sum(coalesce(p.word_count, 0)) AS words
MERGE (s:Space {name: name})
SET s.live_passages = coalesce(s.live_passages, 0) + passages, s.live_words = coalesce(s.live_words, 0) + words
