// GDS: drop the projection $graph if there is one (no error when there is none).
CALL gds.graph.drop($graph, false) YIELD graphName
RETURN graphName
