// What the graph knows about an entity, as a graph: its facts (RELATES, both directions,
// captioned by predicate with hippo.grass), its synonyms, and the passages that mention it
// with their documents. Edit the name on the WITH line (any case, or an entity id), then
// paste the whole file into the Neo4j Browser and run it. Example from the sample corpus.
WITH 'Tide-clock' AS name
MATCH (e:Entity)
WHERE e.id = name OR toLower(e.name) = toLower(name)
OPTIONAL MATCH fact = (e)-[:RELATES]-(:Entity)
OPTIONAL MATCH synonym = (e)-[:SYNONYM]-(:Entity)
OPTIONAL MATCH mention = (:Document)-[:HAS_PASSAGE]->(p:Passage)-[:MENTIONS]->(e)
WHERE p.forgotten_at IS NULL
RETURN e, collect(DISTINCT fact) AS facts, collect(DISTINCT synonym) AS synonyms,
       collect(DISTINCT mention)[..25] AS mentions
