// benchmarks/frontier_reads.py: the same traversal, counted: what finding the frontier's nodes and walking
// their relationships costs alone.
CALL () {
  UNWIND $passages AS pid
  MATCH (p:Passage {id: pid})
  RETURN COUNT { (p)-[:MENTIONS]->(:Entity) } AS edges
  UNION ALL
  UNWIND $entities AS eid
  MATCH (e:Entity {id: eid})
  RETURN COUNT { (:Passage)-[:MENTIONS]->(e) } + COUNT { (e)-[:RELATES]-(o:Entity) WHERE o <> e }
         + COUNT { (e)-[:SYNONYM]-(:Entity) } AS edges
}
RETURN sum(edges) AS edges
