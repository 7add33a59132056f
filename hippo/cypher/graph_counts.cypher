// The walk graph's size as the in-process projection counts it (Projection.stats), read store-side so
// `hippo stats` in store-side read mode loads no graph: every passage (retired ones too) and entity,
// the live passages, and the edges by kind. O(spaces): Neo4j's count store and the spaces' live
// passage counters (schema.cypher). Indexing writes no fact from an entity to itself, which the
// projection would not count.
CALL () { MATCH (n:Passage) RETURN count(n) AS stored }
CALL () { MATCH (s:Space) RETURN sum(s.live_passages) AS passages }
CALL () { MATCH (n:Entity) RETURN count(n) AS entities }
CALL () { MATCH ()-[r:RELATES]->() RETURN count(r) AS relations }
CALL () { MATCH ()-[r:MENTIONS]->() RETURN count(r) AS mentions }
CALL () { MATCH ()-[r:SYNONYM]->() RETURN count(r) AS synonyms }
RETURN stored + entities AS vertices, passages, entities, relations AS relation_edges, mentions AS mention_edges,
       synonyms AS synonym_edges
