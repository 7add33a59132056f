// The nodes whose visible edges change when these passages are forgotten or restored: the entities
// they mention and the ends of their facts (a write's (:Change), write_change.cypher).
// $ids: [passage id]
UNWIND $ids AS id
MATCH (p:Passage {id: id})
CALL (p) {
  OPTIONAL MATCH (p)-[:MENTIONS]->(e:Entity)
  RETURN collect(e.id) AS mentioned
}
CALL (p) {
  OPTIONAL MATCH (s:Entity)-[:RELATES {passage_id: p.id}]->(o:Entity)
  RETURN collect(s.id) + collect(o.id) AS ends
}
RETURN mentioned + ends AS touched
