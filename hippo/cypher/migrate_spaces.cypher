// Schema version 4 -> 5: every space's live passages and their summed words (schema.cypher), as the
// writes now keep them, counted afresh: idempotent, and the schema version moves to 5 only after it.
// O(passages), once.
MATCH (p:Passage)
WITH p.space AS name,
     sum(CASE WHEN p.forgotten_at IS NULL THEN 1 ELSE 0 END) AS passages,
     sum(CASE WHEN p.forgotten_at IS NULL THEN coalesce(p.word_count, 0) ELSE 0 END) AS words
MERGE (s:Space {name: name})
SET s.live_passages = passages, s.live_words = words
