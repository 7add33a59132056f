// benchmarks/frontier_reads.py: the same traversal returning each target's element id: no property of a
// target is read.
CALL () {
  UNWIND $passages AS pid
  MATCH (p:Passage {id: pid})
  RETURN pid AS owner, [(p)-[:MENTIONS]->(e:Entity) | elementId(e)] AS targets
  UNION ALL
  UNWIND $entities AS eid
  MATCH (e:Entity {id: eid})
  RETURN eid AS owner, [(p:Passage)-[:MENTIONS]->(e) | elementId(p)]
         + [(e)-[:RELATES]-(o:Entity) WHERE o <> e | elementId(o)] + [(e)-[:SYNONYM]-(o:Entity) | elementId(o)] AS targets
}
RETURN collect([owner, targets]) AS edges
