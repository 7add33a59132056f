// Passages without their BM25 words (left by a store of schema version 2 or older), a page at a time.
MATCH (p:Passage) WHERE p.words IS NULL
RETURN p.id AS id, p.title AS title, p.text AS text
LIMIT $limit
