// benchmarks/frontier_reads.py: a frontier's edges and its distinct targets (how often a statement
// reads the same node's properties again).
CALL () {
  UNWIND $passages AS pid
  MATCH (p:Passage {id: pid})
  RETURN [(p)-[:MENTIONS]->(e:Entity) | e] AS targets
  UNION ALL
  UNWIND $entities AS eid
  MATCH (e:Entity {id: eid})
  RETURN [(p:Passage)-[:MENTIONS]->(e) | p] + [(e)-[:RELATES]-(o:Entity) WHERE o <> e | o]
         + [(e)-[:SYNONYM]-(o:Entity) | o] AS targets
}
UNWIND targets AS target
RETURN count(target) AS edges, count(DISTINCT target) AS targets
