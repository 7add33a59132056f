// Whether the database holds anything at all (a bulk import only loads an empty one):
// how many nodes, counted up to $limit, and how many of them are hippo passages.
CALL () { MATCH (n) RETURN n LIMIT $limit }
RETURN count(n) AS nodes, count(CASE WHEN n:Passage THEN 1 END) AS passages
