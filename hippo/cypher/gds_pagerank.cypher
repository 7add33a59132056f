// GDS: personalized PageRank on the projection $graph from the passages and entities $sources
// ([id], an equal share each: GDS 2.13 refuses [node, weight] pairs as sourceNodes), damping
// $damping (the probability of following an edge). Returns the $top passages by mass, in one
// record of [id, score] pairs (the driver's cost is per record).
UNWIND $sources AS sid
CALL (sid) {
  OPTIONAL MATCH (p:Passage {id: sid}) RETURN p AS node
  UNION
  OPTIONAL MATCH (e:Entity {id: sid}) RETURN e AS node
}
WITH node WHERE node IS NOT NULL
WITH collect(DISTINCT node) AS sources
CALL gds.pageRank.stream($graph, {sourceNodes: sources, dampingFactor: $damping, relationshipWeightProperty: 'w',
                                  maxIterations: $iterations, tolerance: $tolerance})
YIELD nodeId, score
WITH nodeId, score WHERE score > 0
WITH gds.util.asNode(nodeId) AS node, score
WHERE node:Passage
WITH node.id AS id, score ORDER BY score DESC LIMIT $top
RETURN collect([id, score]) AS passages
