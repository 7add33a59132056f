// (id, text hash, vector bytes) of live passages, in store order.
MATCH (r:Passage)
WHERE r.forgotten_at IS NULL
MATCH (v:Vector {hash: r.embed_hash})
RETURN r.id AS id, r.embed_hash AS hash, v.vector AS vector
ORDER BY r.seq
