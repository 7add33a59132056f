// The passages that mention an entity, as a table: document, passage, where it sits in its
// source, how many entities it mentions (fewer = the entity matters more to it), and its text.
// Edit the name on the WITH line (any case, or an entity id), then paste the whole file into the
// Neo4j Browser and run it. Example from the sample corpus.
WITH 'Südhof & Lind Horology' AS name
MATCH (e:Entity)
WHERE e.id = name OR toLower(e.name) = toLower(name)
MATCH (d:Document)-[:HAS_PASSAGE]->(p:Passage)-[:MENTIONS]->(e)
WHERE p.forgotten_at IS NULL
RETURN e.name AS entity, d.title AS document, p.id AS passage, p.space AS space,
       p.source AS source, p.page AS page, p.headings AS headings,
       COUNT { (p)-[:MENTIONS]->() } AS entities_mentioned, p.text AS text
ORDER BY document, p.index
