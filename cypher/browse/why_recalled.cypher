// Why was a passage recalled? The shortest paths (up to 4 hops over facts, synonyms and
// mentions, the edges PPR walks) from each seed of the recall to the passage.
// Edit the WITH line: the seed ids from the recall result (seeds[].id or clues[].seedIds, entity
// names work too) and the hit's id. Then paste the whole file into the Neo4j Browser and run it.
// Example: question q01 of the sample corpus ("In which year was the company co-founded by the
// inventor of the tide-clock dissolved?").
WITH ['entity:c7b745662a1df0635579', 'entity:8468d586fc1b1ea92e70', 'entity:37e1c9c6d5221a24e7b6'] AS seeds, 'passage:fa4597cd15334a7dc4cd' AS passage
MATCH (p:Passage {id: passage})
MATCH (seed:Entity)
WHERE seed.id IN seeds OR seed.name IN seeds
OPTIONAL MATCH path = shortestPath((seed)-[:RELATES|SYNONYM|MENTIONS*..4]-(p))
RETURN seed.name AS seed, seed.id AS seed_id, length(path) AS hops,
       [n IN nodes(path) | CASE WHEN n:Passage THEN 'passage: ' + n.name ELSE n.name END] AS via,
       [r IN relationships(path) | coalesce(r.predicate, type(r))] AS edges, path
ORDER BY hops
