// benchmarks/frontier_reads.py: read_neighbours.cypher's traversal ($everything case) with each target's
// strength read from one property (its mention counter) instead of three: what a single maintained
// strength property would cost.
CALL () {
  UNWIND $passages AS pid
  MATCH (p:Passage {id: pid})
  WITH pid, [(p)-[:MENTIONS]->(e:Entity) | [e.id, e.mention_count]] AS mentioned
  RETURN pid AS owner, [m IN mentioned | m[0]] AS targets, [m IN mentioned | m[1]] AS strengths
  UNION ALL
  UNWIND $entities AS eid
  MATCH (e:Entity {id: eid})
  WITH eid, [(p:Passage)-[:MENTIONS]->(e) | [p.id, p.mention_count]]
            + [(e)-[:RELATES]-(o:Entity) WHERE o <> e | [o.id, o.mention_count]]
            + [(e)-[s:SYNONYM]-(o:Entity) | [o.id, o.mention_count]] AS reached
  RETURN eid AS owner, [x IN reached | x[0]] AS targets, [x IN reached | x[1]] AS strengths
}
RETURN collect([owner, targets, strengths]) AS edges
