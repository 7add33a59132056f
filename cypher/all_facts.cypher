// Every fact (what a re-embedding encodes).
MATCH (s:Entity)-[r:RELATES]->(o:Entity)
RETURN r.id AS id, s.id AS subject_id, r.predicate AS predicate, o.id AS object_id,
       r.passage_id AS passage_id, r.subject AS subject, r.object AS object
