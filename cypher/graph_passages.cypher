// Live passages in store order (the order they were first written).
MATCH (p:Passage)
WHERE p.forgotten_at IS NULL
RETURN p.id AS id, p.space AS space
ORDER BY p.seq
