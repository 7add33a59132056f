// Every passage of these documents: all versions, tombstones included.
UNWIND $ids AS id
MATCH (:Document {id: id})-[:HAS_PASSAGE]->(p:Passage)
RETURN p.id AS id, p.doc_id AS doc_id, p.index AS index, p.title AS title, p.text AS text,
       p.space AS space, p.version AS version, p.forgotten_at AS forgotten_at,
       p.forgotten_reason AS forgotten_reason, p.created_at AS created_at,
       p.source AS source, p.page AS page, p.headings AS headings
ORDER BY p.doc_id, p.version, p.index
