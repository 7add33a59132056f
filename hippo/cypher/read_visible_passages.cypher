// Every visible passage id, in store order: only for a passage prior over all of them
// (passage_prior_top = 0), O(passages). $spaces
MATCH (p:Passage)
WHERE p.forgotten_at IS NULL AND ($spaces IS NULL OR p.space IN $spaces)
RETURN p.id AS id ORDER BY p.seq
