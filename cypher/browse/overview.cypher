// What the graph holds: one row per kind of node and relationship, with what it is.
// No parameters: paste the whole file into the Neo4j Browser and run it.
MATCH (n:Document) RETURN 'Document' AS kind, count(n) AS count, 'a source text or a remembered memory' AS what
UNION ALL
MATCH (n:Passage) WHERE n.forgotten_at IS NULL
RETURN 'Passage' AS kind, count(n) AS count, 'a live chunk of a document (what recall returns)' AS what
UNION ALL
MATCH (n:Passage) WHERE n.forgotten_at IS NOT NULL
RETURN 'Passage (retired)' AS kind, count(n) AS count, 'forgotten or superseded, kept as history' AS what
UNION ALL
MATCH (n:Entity) RETURN 'Entity' AS kind, count(n) AS count, 'a named thing, one per normalized name' AS what
UNION ALL
MATCH ()-[r:RELATES]->() RETURN 'RELATES' AS kind, count(r) AS count, 'a fact: subject -[predicate]-> object' AS what
UNION ALL
MATCH ()-[r:MENTIONS]->() RETURN 'MENTIONS' AS kind, count(r) AS count, 'a passage names an entity' AS what
UNION ALL
MATCH ()-[r:SYNONYM]->() RETURN 'SYNONYM' AS kind, count(r) AS count, 'two entities whose names embed close (score)' AS what
UNION ALL
MATCH ()-[r:HAS_PASSAGE]->() RETURN 'HAS_PASSAGE' AS kind, count(r) AS count, 'a document holds a passage' AS what
UNION ALL
MATCH (n:Vector) RETURN 'Vector' AS kind, count(n) AS count, 'one embedding per distinct text (vector indexes)' AS what
UNION ALL
MATCH (n:Value) RETURN 'Value' AS kind, count(n) AS count, 'the key-value area: API keys, LLM answer cache' AS what
UNION ALL
MATCH (n:Meta) RETURN 'Meta' AS kind, count(n) AS count, 'revision counter and the bound embedding model' AS what
