// Every passage, every version and tombstone (what a re-embedding encodes).
MATCH (p:Passage)
RETURN p.id AS id, p.doc_id AS doc_id, p.index AS index, p.title AS title, p.text AS text,
       p.space AS space, p.version AS version, p.forgotten_at AS forgotten_at,
       p.forgotten_reason AS forgotten_reason, p.created_at AS created_at,
       p.source AS source, p.page AS page, p.headings AS headings
