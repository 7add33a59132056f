// Facts of live passages, in store order.
MATCH (s:Entity)-[r:RELATES]->(o:Entity)
MATCH (p:Passage {id: r.passage_id})
WHERE p.forgotten_at IS NULL
RETURN r.id AS id, s.id AS subject_id, o.id AS object_id, r.passage_id AS passage_id
ORDER BY r.seq
