// Every space that holds a live passage (what a protocol caller's "live index" is made of).
// O(spaces): each (:Space) keeps its live passages (schema.cypher).
MATCH (s:Space)
WHERE s.live_passages > 0
RETURN s.name AS space
