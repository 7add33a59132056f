// Mentions by live passages, ordered by (entity id, passage id) like the embedded store.
MATCH (p:Passage)-[:MENTIONS]->(e:Entity)
WHERE p.forgotten_at IS NULL
RETURN p.id AS passage_id, e.id AS entity_id
ORDER BY entity_id, passage_id
