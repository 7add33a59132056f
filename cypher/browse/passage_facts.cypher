// The facts (subject, predicate, object) read from one passage, and the other entities
// it mentions. :param is a passage id, or a document title for all of its passages.
// Example from the sample corpus.
:param passage => 'Tide-clock';

MATCH (p:Passage)
WHERE p.id = $passage OR p.title = $passage
OPTIONAL MATCH (s:Entity)-[r:RELATES {passage_id: p.id}]->(o:Entity)
WITH p, collect(CASE WHEN r IS NULL THEN NULL
                     ELSE {subject: s.name, predicate: r.predicate, object: o.name, fact: r.id} END) AS facts
RETURN p.id AS passage, p.name AS caption, facts,
       [(p)-[:MENTIONS]->(e:Entity) | e.name] AS mentions;
