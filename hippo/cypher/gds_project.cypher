// GDS: hippo's walk graph as an in-memory projection named $graph, undirected and weighted as the
// in-process projection and the store-side push weigh it: a live passage -- each entity it
// mentions ($mention_weight), entity -- entity once per fact read from a live passage
// ($relation_weight; parallel edges add up), entity -- entity per synonym link (its score).
// $spaces: [string] or null (every space). The projection is of what those spaces see at the
// time it runs: a later write is not in it until it is projected again.
CALL () {
  MATCH (p:Passage)-[:MENTIONS]->(e:Entity)
  WHERE p.forgotten_at IS NULL AND ($spaces IS NULL OR p.space IN $spaces)
  RETURN p AS source, e AS target, $mention_weight AS w
  UNION ALL
  MATCH (a:Entity)-[r:RELATES]->(b:Entity)
  WHERE a <> b AND EXISTS {
    MATCH (q:Passage {id: r.passage_id}) WHERE q.forgotten_at IS NULL AND ($spaces IS NULL OR q.space IN $spaces)
  }
  RETURN a AS source, b AS target, $relation_weight AS w
  UNION ALL
  MATCH (a:Entity)-[s:SYNONYM]->(b:Entity)
  WHERE EXISTS {
    MATCH (q:Passage)-[:MENTIONS]->(a) WHERE q.forgotten_at IS NULL AND ($spaces IS NULL OR q.space IN $spaces)
  } AND EXISTS {
    MATCH (q:Passage)-[:MENTIONS]->(b) WHERE q.forgotten_at IS NULL AND ($spaces IS NULL OR q.space IN $spaces)
  }
  RETURN a AS source, b AS target, s.score AS w
}
WITH gds.graph.project($graph, source, target, {relationshipProperties: {w: w}},
                       {undirectedRelationshipTypes: ['*']}) AS g
RETURN g.graphName AS graph, g.nodeCount AS nodes, g.relationshipCount AS relationships
