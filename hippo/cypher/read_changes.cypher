// The writes after revision $since up to $until, each with the nodes it changed (write_change.cypher).
MATCH (c:Change)
WHERE c.revision > $since AND c.revision <= $until
RETURN c.revision AS revision, c.nodes AS nodes
