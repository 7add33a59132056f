// The facts read from a passage, one (subject, predicate, object) row each. Edit the value on
// the WITH line: a passage id, or a document title for all of its live passages. Then paste the
// whole file into the Neo4j Browser and run it. Example from the sample corpus.
WITH 'Tide-clock' AS passage
MATCH (p:Passage)
WHERE (p.id = passage OR p.title = passage) AND p.forgotten_at IS NULL
MATCH (s:Entity)-[r:RELATES {passage_id: p.id}]->(o:Entity)
RETURN s.name AS subject, r.predicate AS predicate, o.name AS object, p.name AS passage, r.id AS fact
ORDER BY passage, subject, predicate, object
