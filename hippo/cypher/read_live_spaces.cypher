// Every space that holds a live passage (what a protocol caller's "live index" is made of).
// O(passages), read once per store revision.
MATCH (p:Passage)
WHERE p.forgotten_at IS NULL
RETURN DISTINCT p.space AS space
