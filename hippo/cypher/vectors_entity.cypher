// (id, text hash, vector bytes) of every entity, in store order.
MATCH (r:Entity)
MATCH (v:Vector {hash: r.embed_hash})
RETURN r.id AS id, r.embed_hash AS hash, v.vector AS vector
ORDER BY r.seq
