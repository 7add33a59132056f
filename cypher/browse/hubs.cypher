// The graph's hubs: the 25 entities the most live passages mention, with a few of their facts.
// No parameters: paste the whole file into the Neo4j Browser and run it.
MATCH (e:Entity)<-[:MENTIONS]-(p:Passage)
WHERE p.forgotten_at IS NULL
WITH e, count(p) AS passages
ORDER BY passages DESC, e.name
LIMIT 25
RETURN e.name AS entity, passages, COUNT { (e)-[:RELATES]-() } AS facts, COUNT { (e)-[:SYNONYM]-() } AS synonyms,
       [(e)-[r:RELATES]->(o:Entity) | e.name + ' ' + r.predicate + ' ' + o.name][..3] AS some_facts
