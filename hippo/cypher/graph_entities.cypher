// Entities that at least one live passage mentions, in store order.
MATCH (e:Entity)
WHERE EXISTS { MATCH (p:Passage)-[:MENTIONS]->(e) WHERE p.forgotten_at IS NULL }
RETURN e.id AS id
ORDER BY e.seq
