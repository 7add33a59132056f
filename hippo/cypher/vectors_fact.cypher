// (id, text hash, vector bytes) of the facts of live passages, in store order.
MATCH ()-[r:RELATES]->()
MATCH (p:Passage {id: r.passage_id})
WHERE p.forgotten_at IS NULL
MATCH (v:Vector {hash: r.embed_hash})
RETURN r.id AS id, r.embed_hash AS hash, v.vector AS vector
ORDER BY r.seq
