// New facts only: one RELATES relationship per fact, subject -> object, counted at both ends
// (fact_count: a fact about itself counts twice, as the in-process projection weighs it), with its
// passage's space and forgotten_at (retire_passages and revive_passages keep them). A fact whose
// subject, object or passage is not stored matches no row (the caller aborts).
// $rows: [{subject_id, object_id, passage_id, seq,
//          props: {id, predicate, passage_id, subject_id, object_id, subject, object, embed_hash}}]
UNWIND $rows AS row
MATCH (s:Entity {id: row.subject_id})
MATCH (o:Entity {id: row.object_id})
MATCH (p:Passage {id: row.passage_id})
CREATE (s)-[r:RELATES]->(o)
SET r = row.props, r.seq = row.seq, r.space = p.space, r.forgotten_at = p.forgotten_at,
    s.fact_count = coalesce(s.fact_count, 0) + 1,
    o.fact_count = coalesce(o.fact_count, 0) + 1
RETURN collect(r.id) AS created
