// Ids of the facts read from each passage, in store order. $ids: [passage id]
UNWIND $ids AS pid
OPTIONAL MATCH ()-[r:RELATES {passage_id: pid}]->()
WITH pid, r ORDER BY r.seq
RETURN pid AS id, [x IN collect(r.id) WHERE x IS NOT NULL] AS facts
