// The facts read from each passage, in store order: [fact id, subject id, object id, passage id, text
// hash] (the rows store-side recall hands out). $ids: [passage id]
UNWIND $ids AS pid
OPTIONAL MATCH (s:Entity)-[r:RELATES {passage_id: pid}]->(o:Entity)
WITH pid, r, s, o ORDER BY r.seq
RETURN pid AS id, [x IN collect(CASE WHEN r IS NULL THEN NULL ELSE [r.id, s.id, o.id, r.passage_id, r.embed_hash] END)
                   WHERE x IS NOT NULL] AS facts
