// The passages that mention an entity, as a table: document, passage, text, and how
// many entities each passage mentions (fewer = the entity matters more to it).
// :param is an entity name (any case) or an entity id. Example from the sample corpus.
:param name => 'Südhof & Lind Horology';

MATCH (e:Entity)
WHERE e.id = $name OR toLower(e.name) = toLower($name)
MATCH (d:Document)-[:HAS_PASSAGE]->(p:Passage)-[:MENTIONS]->(e)
WHERE p.forgotten_at IS NULL
RETURN e.name AS entity, d.title AS document, p.id AS passage, p.space AS space,
       COUNT { (p)-[:MENTIONS]->() } AS entities_mentioned, p.text AS text
ORDER BY document, p.index;
