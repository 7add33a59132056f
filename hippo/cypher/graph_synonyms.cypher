// Every synonym edge (the caller keeps those between live entities), ordered by (a, b).
MATCH (a:Entity)-[s:SYNONYM]->(b:Entity)
RETURN a.id AS a, b.id AS b, s.score AS score
ORDER BY a, b
