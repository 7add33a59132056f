// Per entity: the visible passages mentioning it (its specificity). $ids: [entity id], $spaces
// $everything: the reader sees every space and no passage is forgotten, so the count is the entity's
// mention_count (kept by every write, null in a store not migrated to the counters), read instead of
// each mentioning passage's forgotten_at and space: a live passage has no forgotten_at, which its
// property chain tells only once read to the end (~0.4 us a passage, 7x a present property's,
// results/neo4j_profile-properties.md), and a hub entity has thousands. 120 entities of the 100k
// store, 5,388 mentions: 17,084 db hits -> 480 (the CASE reads COUNT only when taken); its recalls'
// statements replayed: 1.5 -> 0.5 ms of Neo4j's CPU a call (results/store_read-stop61.md).
UNWIND $ids AS eid
MATCH (e:Entity {id: eid})
RETURN eid AS id, CASE WHEN $everything AND e.mention_count IS NOT NULL THEN e.mention_count ELSE COUNT {
  MATCH (p:Passage)-[:MENTIONS]->(e)
  WHERE p.forgotten_at IS NULL AND ($spaces IS NULL OR p.space IN $spaces)
} END AS passages
