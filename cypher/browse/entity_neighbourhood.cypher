// What the graph knows about an entity: its facts (RELATES, both directions), its
// synonyms, and the passages that mention it (with their documents).
// Paste into the Neo4j Browser (http://127.0.0.1:7474/browser/) and run; change the
// :param to an entity name (any case) or an entity id. Example from the sample corpus.
:param name => 'Tide-clock';

MATCH (e:Entity)
WHERE e.id = $name OR toLower(e.name) = toLower($name)
OPTIONAL MATCH fact = (e)-[:RELATES]-(:Entity)
OPTIONAL MATCH synonym = (e)-[:SYNONYM]-(:Entity)
OPTIONAL MATCH mention = (:Document)-[:HAS_PASSAGE]->(p:Passage)-[:MENTIONS]->(e)
WHERE p.forgotten_at IS NULL
RETURN e, collect(DISTINCT fact) AS facts, collect(DISTINCT synonym) AS synonyms,
       collect(DISTINCT mention)[..25] AS mentions;
