// benchmarks/frontier_reads.py: read_neighbours.cypher's traversal (every space, nothing forgotten: the
// $everything case) returning each target's id property and no strength.
CALL () {
  UNWIND $passages AS pid
  MATCH (p:Passage {id: pid})
  RETURN pid AS owner, [(p)-[:MENTIONS]->(e:Entity) | e.id] AS targets
  UNION ALL
  UNWIND $entities AS eid
  MATCH (e:Entity {id: eid})
  RETURN eid AS owner, [(p:Passage)-[:MENTIONS]->(e) | p.id] + [(e)-[:RELATES]-(o:Entity) WHERE o <> e | o.id]
         + [(e)-[:SYNONYM]-(o:Entity) | o.id] AS targets
}
RETURN collect([owner, targets]) AS edges
