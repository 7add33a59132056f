// New facts only: one RELATES relationship per fact, subject -> object. A fact whose
// subject, object or passage is not stored matches no row (the caller aborts).
// $rows: [{subject_id, object_id, passage_id, seq,
//          props: {id, predicate, passage_id, subject_id, object_id, subject, object, embed_hash}}]
UNWIND $rows AS row
MATCH (s:Entity {id: row.subject_id})
MATCH (o:Entity {id: row.object_id})
MATCH (:Passage {id: row.passage_id})
CREATE (s)-[r:RELATES]->(o)
SET r = row.props, r.seq = row.seq
RETURN collect(r.id) AS created
