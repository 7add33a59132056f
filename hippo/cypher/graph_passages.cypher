// Live passages in store order (the order they were first written), with the text
// the in-process keyword index reads.
MATCH (p:Passage)
WHERE p.forgotten_at IS NULL
RETURN p.id AS id, p.space AS space, p.title AS title, p.text AS text
ORDER BY p.seq
